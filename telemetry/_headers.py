"""The ``OTEL_EXPORTER_OTLP_*_HEADERS`` variables, checked before any exporter reads them.

The OpenTelemetry exporters parse these variables themselves and, for an entry that is
not ``name=value``, log a WARNING that quotes the entry whole (an ``authorization:
Bearer ...`` written as an HTTP header puts its token on stderr, three times: once per
exporter) and send without it, so the collector refuses every export. A header is how a
collector's credentials travel, so such an entry is refused here, naming the variable
and the header, never its value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from regiment.errors import ConfigError

__all__ = ("HEADER_VARIABLES", "check_header_variables")

HEADER_VARIABLES = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
)

# The exporters' (liberal) reading: an HTTP token, "=", then printable ASCII but for
# '"', ',', ';' and '\' (a value is URL-encoded to hold those).
_NAME = r"[!#-'*+\-.0-9A-Z^-z|~]+"
_ENTRY = re.compile(rf"[ \t]*{_NAME}[ \t]*=[ \t]*[ !#-+\--:<-\[\]-~]*[ \t]*")
_DELIMITER = re.compile(r"[ \t]*,[ \t]*")
_LABELLED = re.compile(rf"[ \t]*({_NAME})[ \t]*[:=]")


def check_header_variables(environ: Mapping[str, str]) -> None:
    """Raise ``ConfigError`` for a headers variable with an entry the exporters would drop.

    Raises:
        ConfigError: an entry is not ``name=value``; the message names the variable, the
            entry's place and its header name when it has one, never the value.
    """
    for variable in HEADER_VARIABLES:
        entries = [e for e in _DELIMITER.split(environ.get(variable, "")) if e.strip()]
        for number, entry in enumerate(entries, 1):
            if _ENTRY.fullmatch(entry.strip()):
                continue
            label = _LABELLED.match(entry)
            which = f"header {label.group(1)!r}" if label else f"entry {number}"
            raise ConfigError(
                f"{variable}: {which} is not name=value (its value is not shown: it may be a "
                "secret); write each header as name=value, separated by commas, with the value "
                "URL-encoded (a space is %20, a comma %2C), e.g. "
                f"{variable}='authorization=Bearer%20<token>'"
            )
