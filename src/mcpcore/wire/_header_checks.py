"""C5: the headers a host may set, checked one by one. Pure rules, no I/O.

The one place header names and values are checked: for ``mcp.json`` entries
(``config``, which expands each value first), for servers built in code, and
for what a ``headers=`` callable gives for one request (V3). A refusal names
the header, never its value (C8). Header names the client sets itself may not
be configured.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import NoReturn

from ..base._errors import ConfigError, InvalidValue
from ..base._escape import json_type_name, shown_key

__all__ = ["CLIENT_OWNED_HEADERS", "check_dynamic_headers", "checked_headers"]

#: Header names (lowercase) the client sets itself; configuring one is refused (C5).
#: The first three come from seed 000; ``mcp-method`` / ``mcp-name`` are the
#: stateless revision's headers; the rest are framing and hop-by-hop headers
#: that belong to the HTTP driver.
CLIENT_OWNED_HEADERS: frozenset[str] = frozenset(
    {
        "accept",
        "mcp-session-id",
        "last-event-id",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "content-type",
        "content-length",
        "host",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
    }
)

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_HEADER_BAD_CHAR = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


def checked_headers(
    headers: Mapping[str, object],
    fail: Callable[[str, str], NoReturn],
    expand: Callable[[str, str, str], str] | None = None,
) -> dict[str, str]:
    """C5: configured headers, checked one by one (and expanded when ``expand``).

    The one place header names and values are checked, for ``mcp.json`` entries
    and for servers built in code. A refusal names the header, never its
    value (C8).
    """
    checked: dict[str, str] = {}
    seen: dict[str, str] = {}
    for hname, value in headers.items():
        if not isinstance(hname, str):  # a server built in code may break its type
            fail(f"a header name must be a string, not {json_type_name(hname)}", "headers")
        key = f"headers.{hname}"
        label = f"header {shown_key(hname)}"
        if not _TOKEN.fullmatch(hname):
            fail(f"{label}: the name is not a valid HTTP field name (RFC 9110 token)", key)
        lower = hname.lower()
        if lower in CLIENT_OWNED_HEADERS:
            fail(f"{label} is set by the client and may not be configured", key)
        if lower in seen:
            fail(f"{label} repeats {shown_key(seen[lower])} (names are case-insensitive)", key)
        seen[lower] = hname
        if not isinstance(value, str):
            fail(f"{label} value must be a string, not {json_type_name(value)}", key)
        if expand is not None:
            value = expand(value, label, key)
        if "\r" in value or "\n" in value:
            fail(f"{label} value contains a line break", key)
        if "\x00" in value:
            fail(f"{label} value contains a NUL character", key)
        if _HEADER_BAD_CHAR.search(value):
            fail(f"{label} value contains a control character", key)
        if not value.isascii():
            fail(f"{label} value contains non-ASCII characters", key)
        if value != value.strip(" \t"):
            # A pasted token often carries a space or tab; HTTP would refuse it later,
            # with the value in its message.
            fail(f"{label} value begins or ends with whitespace", key)
        checked[hname] = value
    return checked


def check_dynamic_headers(server: str, headers: object) -> dict[str, str]:
    """V3: what a ``headers=`` callable returned for one request, checked as C5 checks
    configured headers. Raises :class:`InvalidValue` naming the header (or the type
    of what came back), never a value: that request fails, nothing else."""
    if not isinstance(headers, Mapping):
        raise InvalidValue(
            f"the headers callable returned a value of type {type(headers).__name__}, "
            "not a mapping of header names to values"
        )
    try:
        return checked_headers(headers, partial(_refuse, server))
    except ConfigError as exc:
        raise InvalidValue(f"the headers callable's result: {exc.reason}") from None


def _refuse(server: str, message: str, key: str | None) -> NoReturn:
    raise ConfigError(message, key=key, server=server)
