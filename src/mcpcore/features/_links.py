"""Which site a link opens: the one rule for showing a URL's host to a person (Q2).

A server that asks the person to visit a URL (a URL elicitation, a ``-32042``
refusal) chooses every character of it, so the host shown must be the host a
browser would open, not the one a quick reading suggests. Browsers parse a
URL by the WHATWG URL standard, which differs from a naive split in ways that
phishing links use:

* ``https://evil.example#@accounts.example.com``: the authority ends at the
  first ``/``, ``?`` or ``#``; everything after it is path, query or fragment;
* ``https://evil.example\\@accounts.example.com``: for ``http`` and ``https``
  a ``\\`` is a ``/``, so it ends the authority too;
* ``https://accounts.example.com@evil.example``: before the last ``@`` is a
  user name (and password), not the host;
* tabs and newlines anywhere are dropped, leading and trailing spaces and
  control characters stripped, and any run of ``/`` and ``\\`` after the
  scheme's ``:`` skipped (``https:evil.example``, ``https:\\\\evil.example``);
* the host is percent-decoded (``evil%2Eexample``), mapped by IDNA (full-width
  letters and ``。`` become ASCII), and a host that ends in a number is an
  IPv4 address in any of its spellings (``0x7f.1`` is ``127.0.0.1``);
* the scheme's default port is dropped (``:443`` on ``https``).

``link_target(url)`` applies those steps (parsing with ``urllib.parse`` once
the string is in the form the browser reads) and returns a ``LinkTarget``,
or ``None`` for a URL that is not ``http``/``https`` or whose host a browser
would refuse: such a URL is never shown as if it led somewhere. A host is
given in its ASCII form, so a name written in look-alike letters of another
script shows as ``xn--…``. Standard library only, no I/O (C1).
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import unquote, urlsplit

from ..base._record import record

__all__ = ["LinkTarget", "link_target"]

_DEFAULT_PORTS = {"http": 80, "https": 443}
# WHATWG: leading and trailing C0 controls and spaces are stripped; every ASCII
# tab and newline is removed wherever it is.
_EDGES = "".join(chr(c) for c in range(0x21))
_TAB_OR_NEWLINE = re.compile("[\t\n\r]")
_AUTHORITY_END = re.compile("[/?#]")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# Code points a browser refuses in a host (WHATWG "forbidden domain code point"),
# checked after percent-decoding and IDNA.
_FORBIDDEN = re.compile("[\x00-\x20#%/:<>?@\\[\\\\\\]^|\x7f]")
_MAX_HOST = 253
# Where the standard library's IDNA (2003) and a browser's (UTS 46, nontransitional)
# map a name to different hosts (``faß.de``): such a name is not shown at all.
_DEVIATIONS = re.compile("[\u00df\u03c2\u200c\u200d]")


@record(frozen=True, slots=True)
class LinkTarget:
    """The site a link opens: ``scheme`` (``http``/``https``), ``host`` (ASCII:
    a name in punycode, an IPv4 address dotted, an IPv6 address in brackets),
    ``port`` (``None`` for the scheme's default) and ``has_userinfo`` (the URL
    carries a user name before an ``@``, a common way to make a link look as if
    it led to the name written there)."""

    scheme: str
    host: str
    port: int | None = None
    has_userinfo: bool = False

    @property
    def origin(self) -> str:
        """``scheme://host[:port]``: what may be shown of the link (its path and
        query may hold a secret)."""
        port = "" if self.port is None else f":{self.port}"
        return f"{self.scheme}://{self.host}{port}"


def link_target(url: str) -> LinkTarget | None:
    """The site a browser would open for ``url``; ``None`` when it is not an
    ``http``/``https`` URL with a host a browser would accept."""
    if not isinstance(url, str):
        return None
    text = _TAB_OR_NEWLINE.sub("", url.strip(_EDGES))
    match = _SCHEME.match(text)
    if match is None:
        return None
    scheme = match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    # Special schemes: "\" is "/", and any run of slashes after "scheme:" leads to
    # the authority. Rewritten into the one form urllib.parse reads the same way.
    rest = text[match.end() :].replace("\\", "/").lstrip("/")
    # The authority ends at the first "/", "?" or "#"; before its last "@" is a
    # user name (which may hold any other character), after it the host and port.
    authority = _AUTHORITY_END.split(rest, maxsplit=1)[0]
    _, at, host_port = authority.rpartition("@")
    try:
        parts = urlsplit(f"{scheme}://{host_port}")
        port = parts.port  # ValueError: not a number, or out of range
        raw_host = parts.netloc
        if raw_host.startswith("["):
            literal, _, after = raw_host[1:].partition("]")
            host = _ipv6(literal) if after == "" or after.startswith(":") else None
        else:
            host = _domain(raw_host.rpartition(":")[0] if ":" in raw_host else raw_host)
    except ValueError:
        return None
    if host is None:
        return None
    return LinkTarget(
        scheme=scheme,
        host=host,
        port=None if port is None or port == _DEFAULT_PORTS[scheme] else port,
        has_userinfo=bool(at),
    )


def _ipv6(text: str) -> str | None:
    if "%" in text:  # a zone id: browsers refuse it
        return None
    return f"[{ipaddress.IPv6Address(text).compressed}]"


def _domain(text: str) -> str | None:
    decoded = unquote(text, errors="strict")
    if not decoded or _DEVIATIONS.search(decoded):
        return None
    try:
        ascii_host = decoded.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None
    if _FORBIDDEN.search(ascii_host) or len(ascii_host.rstrip(".")) > _MAX_HOST:
        return None
    if _ends_in_number(ascii_host):
        return _ipv4(ascii_host)
    return ascii_host


def _ends_in_number(host: str) -> bool:
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels.pop()
    last = labels[-1]
    if last.isdigit() and last.isascii():
        return True
    return last[:2] in ("0x", "0X") and all(c in "0123456789abcdefABCDEF" for c in last[2:])


def _ipv4(host: str) -> str | None:
    """WHATWG's IPv4 parser: up to four parts, each decimal, ``0x`` hex or
    ``0`` octal, the last one filling the bytes left."""
    parts = host.split(".")
    if parts[-1] == "" and len(parts) > 1:
        parts.pop()
    if len(parts) > 4:
        return None
    numbers: list[int] = []
    for part in parts:
        number = _ipv4_number(part)
        if number is None:
            return None
        numbers.append(number)
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return None
    address = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        address += number * 256 ** (3 - index)
    return str(ipaddress.IPv4Address(address))


def _ipv4_number(part: str) -> int | None:
    if not part:
        return None
    base = 10
    if part[:2] in ("0x", "0X"):
        part, base = part[2:], 16
    elif len(part) > 1 and part[0] == "0":
        part, base = part[1:], 8
    if not part:
        return 0
    try:
        return int(part, base) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None
