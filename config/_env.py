"""``${NAME}`` in a team file: secrets read from the environment, not written in the file.

A token for an MCP server belongs in the environment (or a secret store that fills
it), not in a file that is committed and shared. So the values of an MCP entry's
``headers`` and ``env``, and the user, password and query values of its ``url``,
may name environment variables, as Docker Compose files and MCP clients' own
configuration files do::

    [[workers.mcp]]
    url = "https://mcp.example.com/mcp"
    headers = { Authorization = "Bearer ${MCP_TOKEN}" }

``${NAME}`` is the variable's value, ``${NAME:-default}`` the default when it is
unset or empty, and ``$$`` one ``$``. Any other ``$`` is an error, so that a
``$NAME`` meant as a reference is never sent as it is written. Values are read
when the file is loaded; a variable that is not set is an error naming the file,
the key path and the variable, and no message ever shows a value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

from regiment.errors import ConfigError

__all__ = ("expand", "expand_url")

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with each ``${NAME}`` (``${NAME:-default}``) read from ``environ``
    (``os.environ``) and each ``$$`` made one ``$``.

    Raises:
        ConfigError: a variable is not set and has no default, a reference names no
            variable, or a ``$`` starts neither; the message starts with ``where``.
    """
    env = os.environ if environ is None else environ
    parts: list[str] = []
    start = 0
    while (dollar := value.find("$", start)) != -1:
        parts.append(value[start:dollar])
        if value.startswith("$$", dollar):
            parts.append("$")
            start = dollar + 2
            continue
        end = value.find("}", dollar) if value.startswith("${", dollar) else -1
        if end == -1:
            raise ConfigError(
                f"{where}: a `$` starts an environment reference: write `${{NAME}}` for "
                "the variable NAME, or `$$` for a `$` itself"
            )
        parts.append(_lookup(value[dollar + 2 : end], where, env))
        start = end + 1
    parts.append(value[start:])
    return "".join(parts)


def _lookup(reference: str, where: str, env: Mapping[str, str]) -> str:
    name, has_default, default = reference.partition(":-")
    if not _NAME.fullmatch(name):
        raise ConfigError(
            f"{where}: `${{{reference}}}` names no environment variable: a name is "
            "letters, digits and `_`, not starting with a digit (`${NAME:-default}` "
            "gives a default)"
        )
    found = env.get(name)
    if has_default and not found:  # unset or empty, as in a shell or a Compose file
        return default
    if found is None:
        raise ConfigError(
            f"{where}: the environment variable {name} is not set; set it where the team "
            f"runs (export {name}=...), or give a default (`${{{name}:-...}}`)"
        )
    return found


def expand_url(url: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``url`` expanded as :func:`expand` does, where references may stand only for
    its user, password and query values: the parts names and messages leave out.

    Raises:
        ConfigError: as ``expand``, or a reference elsewhere in the URL.
    """
    try:
        parts = urlsplit(url.replace("$$", ""))
    except ValueError as exc:  # a bracketed host not closed, say
        raise ConfigError(
            f"{where}: not a valid URL ({exc}); write one such as http://127.0.0.1:8000/mcp"
        ) from None
    keys = [key for key, _, _ in (p.partition("=") for p in parts.query.split("&"))]
    shown = [parts.scheme, parts.netloc.rpartition("@")[2], parts.path, parts.fragment, *keys]
    if any("$" in part for part in shown):
        raise ConfigError(
            f"{where}: an environment reference may stand only for the URL's user, password "
            "or a query value (`?api_key=${KEY}`), which names and messages leave out; "
            "send a secret that goes elsewhere as a header"
        )
    return expand(url, where, environ)
