"""From a function signature to a JSON Schema and a validator for its arguments.

pydantic does the work: each parameter becomes a field of a generated model. The
fields get internal names (``p0``, ``p1``, ...) and the parameter name as alias, so
a parameter may be called ``json``, ``schema`` or ``_private`` without clashing with
``BaseModel``'s own attributes; errors and the schema use the alias.

Validation is pydantic's strict JSON mode, so a call runs only with what the
advertised schema allows: ``"5"`` is not an integer, ``1`` is not ``true``,
``"yes"`` is not a boolean. What JSON can only spell as a string or an object
still arrives typed (an ISO date as a ``date``, an object as a nested model),
an integer is a number, and ``5.0`` is an integer (JSON Schema's view: JSON
has one kind of number).
"""

from __future__ import annotations

import difflib
import functools
import inspect
import json
import logging
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, cast, get_args, get_origin

import msgspec

from regiment._json import JsonObject
from regiment._json_problems import non_finite
from regiment.errors import ConfigError
from regiment.tools._argument_words import not_a_json_object, pydantic_problems
from regiment.tools._closed import closed_json_schema, closed_validator
from regiment.tools._context import is_context_annotation
from regiment.tools._plain import is_plain_annotation, is_plain_data
from regiment.tools._schema_parts import clean_schema, schema_error

if TYPE_CHECKING:
    from pydantic import BaseModel
    from pydantic.fields import FieldInfo
    from pydantic_core import SchemaValidator

__all__ = ("ArgumentSpec", "BoundArguments")

_PLAIN = frozenset({str, int, bool, type(None)})  # JSON values _whole_numbers leaves alone


class BoundArguments(msgspec.Struct, frozen=True):
    """Validated arguments, ready to call the function with and to record.

    Attributes:
        args: the positional-only values, typed.
        kwargs: the other values, typed, defaults filled in.
        as_json: the typed values as JSON (defaults filled in, numbers and dates
            normalised): what approvers see and idempotency keys are made from.
        sent: the arguments exactly as they were given, for the record.
    """

    args: tuple[object, ...]
    kwargs: dict[str, object]
    as_json: JsonObject
    sent: JsonObject


@dataclass(frozen=True)
class ArgumentSpec:
    """The parameters of one function: their schema and their validator."""

    model: type[BaseModel]
    names: tuple[str, ...]
    positional: int  # how many leading parameters are positional-only
    schema: JsonObject
    # The parameter annotated ``RunContext`` (not in the schema), and its place
    # among the positional-only ones if it is one of them.
    context: str | None = None
    context_position: int | None = None
    # Every parameter a plain JSON type (``_plain``): plain arguments skip the JSON text.
    plain: bool = False
    # The model's validator with its nested classes closed to unknown keys (``_closed``);
    # None: there are none to close, and the model's own validator does.
    closed: SchemaValidator | None = None
    # The generated model's field of each parameter, in order (``p0``, ``p1``, ...).
    fields: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(f"p{i}" for i in range(len(self.names))))

    @classmethod
    def of(cls, fn: Callable[..., object], tool_name: str, docs: Mapping[str, str]) -> ArgumentSpec:
        """Build the spec for ``fn``.

        Raises:
            ConfigError: a parameter cannot be described (``*args``, no annotation,
                a type pydantic cannot turn into a schema).
        """
        try:
            signature = inspect.signature(fn, eval_str=True)
        except (NameError, TypeError, ValueError) as exc:
            raise ConfigError(
                f"cannot read the signature of tool {tool_name!r}: {exc}; "
                "define the types its annotations name at module level"
            ) from exc
        # pydantic costs ~40 ms to import: it loads with the first tool, not with regiment.
        import pydantic

        # What a partial binds by keyword is the application's, not the model's: its
        # value (an API key, say) is neither shown in the schema nor open to change.
        fixed = fn.keywords if isinstance(fn, functools.partial) else {}
        every = tuple(p for p in signature.parameters.values() if p.name not in fixed)
        _not_a_method(every, tool_name)
        _described_only(docs, signature, tool_name)
        context = _context_parameter(every, tool_name)
        params = tuple(p for p in every if p is not context)
        fields = {f"p{i}": _field(p, tool_name, docs.get(p.name)) for i, p in enumerate(params)}
        try:
            config = pydantic.ConfigDict(extra="forbid")
            model = pydantic.create_model(f"{tool_name}_arguments", __config__=config, **fields)  # type: ignore[call-overload]
            with warnings.catch_warnings():
                # A default JSON cannot write (a sentinel) is left out of the schema, as
                # meant: the model can only leave such a parameter out. No warning needed.
                warnings.simplefilter("ignore", pydantic.json_schema.PydanticJsonSchemaWarning)
                schema = clean_schema(closed_json_schema(model))
            closed = closed_validator(model)
        except pydantic.PydanticUserError as exc:  # includes PydanticSchemaGenerationError
            raise schema_error(exc, fields, params, tool_name) from exc
        positional = sum(1 for p in params if p.kind is inspect.Parameter.POSITIONAL_ONLY)
        names = tuple(p.name for p in params)
        plain = all(is_plain_annotation(annotation) for annotation, _ in fields.values())
        at = None
        if context is not None and context.kind is inspect.Parameter.POSITIONAL_ONLY:
            at = every.index(context)
        name = None if context is None else context.name
        return cls(model, names, positional, schema, name, at, plain, closed)

    def call_arguments(
        self, bound: BoundArguments, context: object
    ) -> tuple[tuple[object, ...], dict[str, object]]:
        """The arguments to call the function with: ``bound`` plus the run's context."""
        if self.context is None:
            return bound.args, bound.kwargs
        if self.context_position is not None:
            at = self.context_position
            return (*bound.args[:at], context, *bound.args[at:]), bound.kwargs
        return bound.args, {**bound.kwargs, self.context: context}

    def validate(self, arguments: object) -> BoundArguments | str:
        """Validate raw arguments; return them bound, or what is wrong with them."""
        try:
            return self._validate(arguments)
        except RecursionError:  # the checks walk the values: hundreds of levels deep is too many
            return "the arguments nest too deep to read; send flatter JSON"

    def _validate(self, arguments: object) -> BoundArguments | str:
        if type(arguments) is dict:
            if not arguments and not self.fields:  # a tool without parameters, called so
                return BoundArguments((), {}, {}, {})
            if self.plain and is_plain_data(arguments):
                bound = self._plain(arguments)
                if bound is not None:
                    return bound
        elif not isinstance(arguments, Mapping):
            return not_a_json_object(arguments, self.schema)
        try:
            # Through JSON text: strict mode's JSON rules are the ones that match the
            # schema (a date is a string there, a nested model an object).
            text = json.dumps(_whole_numbers(arguments))
        except (TypeError, ValueError) as exc:
            return f"arguments must be JSON data: {exc}"
        # NaN and Infinity, as a lenient JSON parser reads them: JSON has none, nor has
        # the schema's "number" (pydantic's float takes them).
        unfinite = non_finite(arguments) if "NaN" in text or "Infinity" in text else []
        try:
            if self.closed is None:
                instance = self.model.model_validate_json(text, strict=True)
            else:
                instance = self.closed.validate_json(text, strict=True)
        except Exception as exc:
            # Imported only here: the import statement costs two calls on every call.
            from pydantic import ValidationError  # loaded since this spec was built

            if not isinstance(exc, ValidationError):
                raise
            errors = exc.errors(include_url=False)
            return "; ".join([*pydantic_problems(errors, self.schema), *unfinite])
        if unfinite:
            return "; ".join(unfinite)
        return self._bound(instance, arguments)

    def _plain(self, arguments: dict[str, object]) -> BoundArguments | None:
        """Plain arguments checked as Python values (``None``: they fail, and the JSON
        path says why in its own words)."""
        try:
            instance = self.model.model_validate(arguments, strict=True)
        except ValueError:  # pydantic's ValidationError is one
            return None
        return self._bound(instance, arguments)

    def _bound(self, instance: BaseModel, arguments: Mapping[str, object]) -> BoundArguments:
        values: list[object] = []
        for name in self.fields:  # a loop, not a comprehension: this runs on every tool call
            values.append(getattr(instance, name))
        at = self.positional
        return BoundArguments(
            tuple(values[:at]),
            dict(zip(self.names[at:], values[at:], strict=True)),
            instance.model_dump(mode="json", by_alias=True, fallback=_unshown),
            cast(JsonObject, dict(arguments)),
        )


def _unshown(value: object) -> str:
    """How the record of a call writes a value JSON has no word for: a default such as
    a sentinel object (the model can only leave such a parameter out). Its type, not its
    ``repr``, so an idempotency key derived from it is the same in every process."""
    return f"<{type(value).__name__}>"


def _context_parameter(
    params: tuple[inspect.Parameter, ...], tool_name: str
) -> inspect.Parameter | None:
    found = [p for p in params if is_context_annotation(p.annotation)]
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise ConfigError(
            f"tool {tool_name!r} has several RunContext parameters ({names}); keep one"
        )
    return found[0] if found else None


def _whole_numbers(value: object) -> object:
    """``5.0`` as ``5``: to JSON (and JSON Schema) they are the same number."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if type(value) is dict or isinstance(value, Mapping):
        # A loop, and no call for a plain value: this runs on every tool call.
        whole: dict[object, object] = {}
        for key, item in value.items():
            whole[key] = item if type(item) in _PLAIN else _whole_numbers(item)
        return whole
    if isinstance(value, list | tuple):
        return [_whole_numbers(item) for item in value]
    return value


def _described_only(docs: Mapping[str, str], signature: inspect.Signature, tool_name: str) -> None:
    """Warn of a docstring entry for a parameter the function does not have (a typo, or
    one renamed): its words reach no one, and the parameter meant goes undescribed."""
    for name in docs.keys() - signature.parameters.keys():
        close = difflib.get_close_matches(name, signature.parameters, n=1)
        meant = f"; did you mean {close[0]!r}?" if close else ""
        logging.getLogger("regiment.tools").warning(
            "tool %r: its docstring describes %r, which is not one of its parameters, so "
            "the model is not shown that description%s",
            tool_name,
            name,
            meant,
        )


def _not_a_method(params: tuple[inspect.Parameter, ...], tool_name: str) -> None:
    """Refuse a function whose first parameter is a bare ``self`` or ``cls``: ``@tool``
    on a method in its class body, where no instance is bound yet."""
    if params and params[0].name in ("self", "cls") and params[0].annotation is params[0].empty:
        raise ConfigError(
            f"tool {tool_name!r} is a method (its first parameter is {params[0].name!r}): "
            "@tool in a class body has no instance to call it on; make the tool from the "
            "bound method instead, Tool(instance.method), or make it a function"
        )


def _field(param: inspect.Parameter, tool_name: str, doc: str | None) -> tuple[object, FieldInfo]:
    if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
        stars = "*" if param.kind is inspect.Parameter.VAR_POSITIONAL else "**"
        raise ConfigError(
            f"tool {tool_name!r} takes {stars}{param.name}; a tool needs named, typed "
            "parameters so the model can be told what to send (a model sends one JSON "
            "object of named arguments: wrap the function in one with such parameters)"
        )
    if param.annotation is inspect.Parameter.empty:
        raise ConfigError(
            f"parameter {param.name!r} of tool {tool_name!r} has no type annotation; "
            "annotate it so the schema can say what the model must send"
        )
    from pydantic import Field
    from pydantic.fields import FieldInfo

    annotation = param.annotation
    default = param.default
    if isinstance(default, FieldInfo):
        # ``x: int = Field(3, description=...)``: let pydantic merge it as metadata.
        annotation, default = Annotated[annotation, default], inspect.Parameter.empty
    if (said := _annotated_text(annotation)) is not None:
        doc = said  # ``Annotated[str, "The city"]``: the parameter's own words win
    if doc and not _has_description(annotation):
        # Only when set: an explicit ``description=None`` would override the Annotated one.
        annotation = Annotated[annotation, Field(description=doc)]
    if default is inspect.Parameter.empty:
        return annotation, Field(alias=param.name)
    return annotation, Field(default, alias=param.name)


def _has_description(annotation: object) -> bool:
    from pydantic.fields import FieldInfo

    if get_origin(annotation) is not Annotated:
        return False
    return any(isinstance(m, FieldInfo) and m.description for m in get_args(annotation)[1:])


def _annotated_text(annotation: object) -> str | None:
    """The plain string an ``Annotated`` type carries as its description, if any (as
    several agent libraries read it; pydantic itself ignores it)."""
    if get_origin(annotation) is not Annotated:
        return None
    return next((m for m in get_args(annotation)[1:] if isinstance(m, str) and m.strip()), None)
