"""Q2, Q6 (issue 36, R3): the site a URL question is shown to lead to is the site a
browser would open, by one rule in the core (``mcpcore.link_target``) that the
``-32042`` summary and the command line's consent question both use.

The adversarial links a naive split gets wrong (``#@``, ``\\@``, ``?@``, an
``@`` in the user name, percent-encoded and full-width hosts, IPv4 spellings)
are checked by name; generated URLs are checked against the parts they were
built from; and random tricky strings against Node's WHATWG ``URL`` (the
parser browsers share), when Node is installed.
"""

from __future__ import annotations

import io
import ipaddress
import json
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fake_peer import FakeServer, connect
from mcpcore import (
    CallFailed,
    Elicitation,
    InputOptions,
    LinkTarget,
    UrlElicitationRequired,
    link_target,
)
from mcpcore.session._session import SessionOptions
from mcpcore_cli._ask import TerminalAsker

ADVERSARIAL = [
    # (the link, the origin a browser opens)
    ("https://evil.example#@accounts.example.com", "https://evil.example"),
    ("https://evil.example\\@accounts.example.com", "https://evil.example"),
    ("https://evil.example?@accounts.example.com", "https://evil.example"),
    ("https://evil.example/@accounts.example.com", "https://evil.example"),
    ("https://accounts.example.com@evil.example/login", "https://evil.example"),
    ("https://accounts.example.com:pw@evil.example", "https://evil.example"),
    ("https://a@accounts.example.com@evil.example", "https://evil.example"),
    ("https://evil.example\\\\accounts.example.com", "https://evil.example"),
    ("https:evil.example", "https://evil.example"),
    ("https:\\\\evil.example/x", "https://evil.example"),
    ("https:////evil.example", "https://evil.example"),
    ("HTTPS://EVIL.Example:443/", "https://evil.example"),
    ("http://evil.example:80/", "http://evil.example"),
    ("https://evil.example:8443/", "https://evil.example:8443"),
    ("https://evil.example:/", "https://evil.example"),
    ("https://ev\til.exa\nmple/", "https://evil.example"),
    ("  https://evil.example/  ", "https://evil.example"),
    ("https://evil%2Eexample/", "https://evil.example"),
    ("https://ｅｖｉｌ。example/", "https://evil.example"),
    ("https://bücher.example/", "https://xn--bcher-kva.example"),
    ("https://аррӏе.com/", "https://xn--80ak6aa92e.com"),  # Cyrillic look-alikes
    ("https://0x7f.1/", "https://127.0.0.1"),
    ("https://2130706433/", "https://127.0.0.1"),
    ("https://0177.0.0.1/", "https://127.0.0.1"),
    ("https://[::FFFF:7F00:1]:8443/", "https://[::ffff:7f00:1]:8443"),
    ("https://[2001:DB8::1]/", "https://[2001:db8::1]"),
]
REFUSED = [
    "javascript:alert(1)",
    "data:text/html,<script>x</script>",
    "ftp://files.example/",
    "file:///etc/passwd",
    "https:///",
    "https://evil.example%40accounts.example.com/",  # "@" in a host: a browser refuses it
    "https://evil.example:99999/",
    "https://evil.example:http/",
    "https://[fe80::1%25eth0]/",
    "https://[::1]x/",
    "https://999.1.1.1/",
    "https://1.2.3.4.5/",
    "https://a.b.0x10/",
    "https://faß.de/",  # the standard library's IDNA and a browser's differ on it
    "",
]


@pytest.mark.parametrize(("link", "origin"), ADVERSARIAL)
def test_Q2_the_shown_site_is_the_one_a_browser_opens(link: str, origin: str) -> None:
    target = link_target(link)
    assert target is not None and target.origin == origin


@pytest.mark.parametrize("link", REFUSED)
def test_Q2_a_link_to_no_http_site_is_never_shown_as_one(link: str) -> None:
    assert link_target(link) is None


def test_Q2_a_user_name_before_an_at_is_flagged() -> None:
    tricked = link_target("https://accounts.example.com@evil.example/")
    assert tricked == LinkTarget("https", "evil.example", None, has_userinfo=True)
    assert link_target("https://evil.example#@accounts.example.com") == LinkTarget(
        "https", "evil.example"
    )


def test_Q2_the_32042_summary_names_the_host_a_browser_opens() -> None:
    """The ``-32042`` refusal's message showed ``accounts.example.com`` for a
    ``\\@`` link (its own split); it now uses the core's rule."""
    server = FakeServer()
    links = [
        "https://evil.example\\@accounts.example.com/x?state=hush",
        "https://other.example#@accounts.example.com",
        "https://accounts.example.com@third.example",
    ]
    data = {
        "elicitations": [
            {"mode": "url", "message": "go", "url": link, "elicitationId": f"e{i}"}
            for i, link in enumerate(links)
        ]
    }
    server.call_handler = lambda message: [
        {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32042, "message": "URL elicitation required", "data": data},
        }
    ]
    options = SessionOptions(
        server_name="srv", input=InputOptions(elicit_form=True, elicit_url=True)
    )
    link = connect(server, options=options)
    call_id = link.engine.call("srv/echo", {}, link.now)
    link.pump()
    [ended] = [e for e in link.events if isinstance(e, CallFailed) and e.call_id == call_id]
    assert isinstance(ended.error, UrlElicitationRequired)
    text = str(ended.error)
    assert "(https://evil.example, https://other.example, https://third.example)" in text
    assert "accounts.example.com" not in text and "hush" not in text
    assert [q.target for q in ended.error.elicitations] == [link_target(x) for x in links]


@pytest.mark.parametrize(
    ("link", "site"),
    [
        ("https://evil.example#@accounts.example.com", "https://evil.example"),
        ("https://evil.example\\@accounts.example.com", "https://evil.example"),
        ("https://evil.example?@accounts.example.com", "https://evil.example"),
        ("https://accounts.example.com@evil.example", "https://evil.example"),
    ],
)
def test_Q6_the_consent_question_names_the_site_a_browser_opens(link: str, site: str) -> None:
    question = Elicitation("srv", None, "url", "Sign in", {}, url=link)
    screen = io.StringIO()
    assert TerminalAsker(io.StringIO("n\n"), screen, interactive=True)(question).action == "decline"
    shown = screen.getvalue()
    assert f"visit a page on {site}:" in shown
    assert "page on https://accounts.example.com" not in shown
    if "accounts.example.com@" in link:
        assert "the site is evil.example, not the name written before it" in shown


def test_Q6_a_link_to_no_http_site_is_declined_without_asking() -> None:
    question = Elicitation("srv", None, "url", "Sign in", {}, url="https://[::1]x/")
    screen = io.StringIO()
    assert TerminalAsker(io.StringIO("y\n"), screen, interactive=True)(question).action == "decline"
    assert "does not lead to an http(s) site" in screen.getvalue()


# --- generated links ----------------------------------------------------------------------------

_LABEL = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_", min_size=1, max_size=12
)
_NAMES = st.builds(
    lambda labels, top: ".".join([*labels, top]),
    st.lists(_LABEL, max_size=3),
    st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", min_size=1, max_size=6),
)
_IPV4 = st.builds(ipaddress.IPv4Address, st.integers(0, 2**32 - 1))
_IPV6 = st.builds(ipaddress.IPv6Address, st.integers(0, 2**128 - 1))
# Anything a user name may hold (an "@" and a ":" too), and what paths, queries and
# fragments may hold ("@", "\\", "/" and "#" included: they must not move the host).
_USERINFO = st.text("abc:@%!$&'()*+,;=.~-", max_size=12)
_TAIL = st.text("abc@:\\/.?#%=&", max_size=16)


@st.composite
def _links(draw: st.DrawFn) -> tuple[str, LinkTarget]:
    scheme = draw(st.sampled_from(["http", "https"]))
    written_scheme = "".join(draw(st.sampled_from([c, c.upper()])) for c in scheme)
    kind = draw(st.sampled_from(["name", "ipv4", "ipv6"]))
    if kind == "name":
        written = draw(_NAMES)
        host = written.lower()
    elif kind == "ipv4":
        address = draw(_IPV4)
        written = host = str(address)
    else:
        address6 = draw(_IPV6)
        written = f"[{address6.exploded if draw(st.booleans()) else address6.compressed}]"
        host = f"[{address6.compressed}]"
    port = draw(st.none() | st.integers(0, 65535))
    userinfo = draw(st.none() | _USERINFO)
    path = draw(st.sampled_from(["", "/", "\\"])) + draw(_TAIL)
    if path and path[0] not in "/\\":
        path = "/" + path
    link = (
        f"{written_scheme}://"
        + ("" if userinfo is None else f"{userinfo}@")
        + written
        + ("" if port is None else f":{port}")
        + path
    )
    default = {"http": 80, "https": 443}[scheme]
    expected = LinkTarget(
        scheme,
        host,
        None if port in (None, default) else port,
        has_userinfo=userinfo is not None,
    )
    return link, expected


@settings(max_examples=300, deadline=None)
@given(_links())
def test_Q2_a_generated_link_shows_the_host_it_was_built_with(case: tuple[str, LinkTarget]) -> None:
    link, expected = case
    assert link_target(link) == expected


# --- against a browser's parser -----------------------------------------------------------------

_NODE = shutil.which("node")
_WHATWG = """
const links = JSON.parse(require("fs").readFileSync(0, "utf8"));
process.stdout.write(JSON.stringify(links.map((l) => {
  try { return new URL(l).origin; } catch (e) { return null; }
})));
"""
_TRICKY = st.text("aeEx.:@#?/\\%2[]0 \t-ｅ。ü", max_size=24)


@pytest.mark.skipif(_NODE is None, reason="Node (a WHATWG URL parser) is not installed")
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["https://", "http://", "https:", "HTTP:\\\\"]), _TRICKY),
        min_size=100,
        max_size=100,
    )
)
def test_Q2_the_shown_site_agrees_with_a_browsers_url_parser(cases: list[tuple[str, str]]) -> None:
    """Where ``link_target`` shows a site, a WHATWG parser opens that same origin; it
    may refuse a link a browser accepts (it is stricter), never the other way round."""
    links = [prefix + rest for prefix, rest in cases]
    assert _NODE is not None
    answer = subprocess.run(
        [_NODE, "-e", _WHATWG],
        input=json.dumps(links),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    for link, origin in zip(links, json.loads(answer.stdout), strict=True):
        target = link_target(link)
        if target is not None:
            assert origin == target.origin, link
