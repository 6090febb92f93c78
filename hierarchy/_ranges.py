"""Range checks for the numbers in the public config types.

The types check their own values (in ``__post_init__``), so a team built in
code and one read from a file are refused with the same words. The error
carries the field's name apart from the sentence, so a team file's message
can name the key path (``team.toml: workers[0].step_timeout: must be ...``).

The ranges (also in the README's team-file reference):

- counts of things that must happen at least once (``max_iterations``,
  ``max_concurrent_steps``, ``max_steps``, ``max_plan_attempts``,
  ``rounds``): integers >= 1;
- budget limits (``model_calls``, ``tool_calls``, ``tokens``,
  ``input_tokens``, ``output_tokens``, ``replans``): integers >= 0, where 0
  allows none; ``None`` (a file leaves the key out) is unlimited;
- token sizes (``threshold_tokens``, ``context_window``): integers >= 1;
- durations (``step_timeout``, ``wall_clock``): finite numbers of seconds > 0,
  or ``None`` for no limit;
- ``window_fraction``: a finite number in (0, 1].
"""

from __future__ import annotations

import math

from regiment.errors import ConfigError

__all__ = (
    "COMMIT_WAIT",
    "LEASE_TTL",
    "NO_LIMIT",
    "InvalidValue",
    "at_least",
    "fraction",
    "model_given",
    "part_given",
    "settings_given",
    "run_concurrency",
    "seconds",
)

NO_LIMIT = "no limit"
# Here, not in run/_journaling, so that Team (its default) loads without the engine.
LEASE_TTL = 30.0  # seconds a run's lease lives without a heartbeat
COMMIT_WAIT = 1.0  # seconds a run's records may wait uncommitted (a process's crash loses them)


class InvalidValue(ConfigError, ValueError):
    """A field of a config type holds a value outside its range.

    It is also a ``ValueError`` so that msgspec, decoding a team file straight
    into a type that checks itself in ``__post_init__`` (``Budget``), wraps it
    in a ``ValidationError`` that carries the key path.

    Attributes:
        owner: what holds the field (``"worker 'billing'"``, ``"Budget"``).
        field: the field's name.
        problem: what is wrong, as a sentence about the field.
    """

    def __init__(self, owner: str, field: str, problem: str) -> None:
        super().__init__(f"{owner}: {field} {problem}")
        self.owner = owner
        self.field = field
        self.problem = problem


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _or_none(means: str, default: float | None = None) -> str:
    if default is None:
        return f", or None for {means} (in a team file: leave the key out)"
    # A file cannot write None, and leaving the key out gives the default, not no limit.
    return f", or None for {means} (in code only; a team file without the key gets {default})"


def at_least(
    owner: str, field: str, value: int | None, minimum: int, *, none_means: str | None = None
) -> None:
    """``value`` is an integer >= ``minimum``; ``None`` too when ``none_means`` says what it means."""
    if value is None and none_means is not None:
        return
    if not _is_int(value) or value is None or value < minimum:
        alternative = _or_none(none_means) if none_means is not None else ""
        raise InvalidValue(
            owner, field, f"must be a whole number >= {minimum}{alternative}; got {value!r}"
        )


def seconds(owner: str, field: str, value: float | None, *, default: float | None = None) -> None:
    """``value`` is ``None`` or a finite number of seconds > 0 (``default``: the field's,
    when it is not ``None``, so that the message can say a file cannot ask for none)."""
    if value is None:
        return
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or value <= 0:
        raise InvalidValue(
            owner,
            field,
            f"must be a finite number of seconds > 0{_or_none(NO_LIMIT, default)}; got {value!r}",
        )


def fraction(owner: str, field: str, value: float) -> None:
    """``value`` is a finite number in (0, 1]."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or not math.isfinite(value) or not 0 < value <= 1:
        raise InvalidValue(
            owner, field, f"must be a number above 0 and at most 1 (a share); got {value!r}"
        )


def run_concurrency(concurrency: int | None, team: int) -> int:
    """A run's concurrency: ``None`` for the team's, else a whole number of at least 1."""
    if concurrency is None:
        return team
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigError(
            f"concurrency={concurrency!r}: a run's concurrency must be a whole number "
            "of at least 1 (or None for the team's)"
        )
    return concurrency


def model_given(owner: str, field: str, value: object, *, optional: bool = False) -> None:
    """``value`` is a ``Model`` (or ``None`` when ``optional``): caught when the
    config is made, not at the first call of a run."""
    from regiment.models import Model

    if (isinstance(value, Model) and not isinstance(value, type)) or (optional and value is None):
        return  # (a Model class has the members too: it failed at the run's first call)
    hint = (
        f"; a spec string is read by regiment.models.model_from_spec({value!r})"
        if isinstance(value, str)
        else _model_lacks(value)
    )
    none = ", or None" if optional else ""
    raise InvalidValue(
        owner,
        field,
        "must be a Model (AnthropicModel(...), OpenAIModel(...), ScriptedModel(...))"
        f"{none}; got {value!r}{hint}",
    )


def _model_lacks(value: object) -> str:
    """What an object of the application's that was meant as a ``Model`` lacks (empty for
    a value of a builtin type): it was refused with no word of why."""
    if isinstance(value, type):
        return f" (the class {value.__name__}, not a model: make one, {value.__name__}(...))"
    if value is None or type(value).__module__ == "builtins":
        return ""
    missing = [n for n in ("name", "provider", "complete") if not hasattr(value, n)]
    return (
        f", which has no {' and no '.join(missing)}: a Model has the properties name and "
        "provider (str: its model id, and who serves it, such as 'anthropic') and "
        "async complete(request: ModelRequest) -> ModelResponse"
    )


def part_given(
    owner: str, field: str, value: object, kind: type, example: str, *, optional: bool = True
) -> None:
    """``value`` is a ``kind`` (or ``None``): caught when the config is made, not as an
    ``AttributeError`` at the first call of a run (``settings={"max_tokens": 5}``)."""
    if (optional and value is None) or isinstance(value, kind):
        return
    hint = f" (write {kind.__name__}(**{value!r:.80}))" if isinstance(value, dict) else ""
    shown = f"{value!r:.80}"
    raise InvalidValue(
        owner,
        field,
        f"must be a {example}{' or None' if optional else ''}; got the "
        f"{type(value).__name__} {shown}{hint}",
    )


def settings_given(owner: str, **fields: object) -> None:
    """Each of ``fields`` is a ``ModelSettings`` or ``None`` (see :func:`part_given`)."""
    from regiment.models import ModelSettings

    for field, value in fields.items():
        part_given(owner, field, value, ModelSettings, "ModelSettings(...)")
