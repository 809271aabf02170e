"""X2: one error hierarchy under McpError; L4: the backoff schedule; X1: escaping."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpcore
from mcpcore import (
    BackendError,
    CallTimeout,
    ConfigError,
    HandshakeError,
    LimitExceeded,
    LocalProtocolError,
    McpError,
    ProtocolError,
    RemoteProtocolError,
    RequestRefused,
    ResourceNotFound,
    ServerError,
    TransportError,
    Unavailable,
    UnknownTool,
    backoff_delay,
    escape_text,
)
from mcpcore.base._escape import excerpt


@pytest.mark.parametrize(
    ("error", "kinds"),
    [
        (ConfigError("bad", key="url"), (McpError,)),
        (LocalProtocolError("misuse"), (ProtocolError, McpError)),
        (RemoteProtocolError("peer"), (ProtocolError, McpError)),
        (HandshakeError("version"), (RemoteProtocolError, ProtocolError, McpError)),
        (LimitExceeded("max_pages", 3, "pages"), (RemoteProtocolError, McpError)),
        (TransportError("down"), (McpError,)),
        (CallTimeout("slow", tool="s/t", budget=1.0), (TransportError, McpError)),
        (BackendError("oops", tool="s/t"), (ServerError, McpError)),
        (RequestRefused("prompts/get", detail="-1: no"), (ServerError, McpError)),
        (ResourceNotFound("a://x"), (RequestRefused, ServerError, McpError)),
        (Unavailable("down", server="s"), (McpError,)),
        (UnknownTool("s/x"), (McpError,)),
    ],
)
def test_X2_hierarchy_lets_a_host_catch_by_kind(error: McpError, kinds: tuple[type, ...]) -> None:
    """X2: every error is an McpError and sits under its kind."""
    for kind in kinds:
        assert isinstance(error, kind)
    assert str(error)


def test_X2_errors_carry_what_a_host_needs() -> None:
    """X2: messages say what happened; attributes carry the details."""
    limit = LimitExceeded("max_pages", 3, "the number of pages")
    assert (limit.limit_name, limit.limit) == ("max_pages", 3) and "max_pages" in str(limit)
    timeout = CallTimeout("tool 's/t' did not finish within its 5 s budget", tool="s/t", budget=5.0)
    assert (timeout.tool, timeout.budget) == ("s/t", 5.0)
    backend = BackendError("the text", tool="s/t")
    assert backend.text == "the text" and "s/t" in str(backend)
    assert Unavailable("refused", server="s").reason == "refused"
    assert UnknownTool("s/x").tool_id == "s/x" and "s/x" in str(UnknownTool("s/x"))
    assert ConfigError("bad", key="url").key == "url"
    assert all(name in mcpcore.__all__ for name in ("McpError", "ConfigError", "CallTimeout"))


def test_L4_backoff_schedule() -> None:
    """L4: 1 s after the first failure, doubling up to 60 s."""
    assert [backoff_delay(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert backoff_delay(10_000) == 60
    with pytest.raises(ValueError):
        backoff_delay(0)


@given(st.text(st.characters(codec=None, categories=None)))
def test_X1_escaped_text_has_no_control_characters(text: str) -> None:
    """X1: nothing a terminal would execute survives escaping, and what is shown can
    always be written as UTF-8 (a lone surrogate is shown, not kept)."""
    shown = escape_text(text, keep_newlines=False)
    assert not any(ord(c) < 0x20 and c != "\t" for c in shown)
    assert "\x1b" not in shown and "\x7f" not in shown and "\x9b" not in shown
    shown.encode("utf-8")


def test_X1_a_lone_surrogate_is_shown_escaped() -> None:
    """X1: a server's JSON may carry "\\ud800", which decodes to a lone surrogate that no
    UTF-8 stream can write (a log handler failed on it in a pin change's warning)."""
    assert escape_text("a\ud800b\udfff") == "a\\ud800b\\udfff"


def test_X1_escape_shows_sequences() -> None:
    """X1: escape sequences are shown, not executed."""
    assert escape_text("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert escape_text("line\nnext") == "line\nnext"
    assert escape_text("\u202eevil") == "\\u202eevil"
    assert excerpt(b"\x1b[31m" + b"x" * 500, 10) == "\\x1b[31mxxxxx…"
    assert excerpt("short") == "short"
    assert excerpt("x" * 300).endswith("…")


def test_X1_X5_backend_error_message_is_a_short_escaped_excerpt() -> None:
    """X1, X5: BackendError's message holds an escaped, bounded excerpt; ``.text`` stays raw."""
    raw = "\x1b[31m" + "x" * 100_000
    error = BackendError(raw, tool="s/t")
    message = str(error)
    assert len(message) < 1000
    assert "\x1b" not in message and "\\x1b[31m" in message
    assert message.endswith("…") and "'s/t'" in message
    assert error.text == raw and error.args == (message,)
    # Newlines are kept; a short text is shown whole, without a cut mark.
    assert str(BackendError("line\nnext\x07")) == "the tool reported an error: line\nnext\\x07"
    assert str(BackendError("")) == "the tool reported an error"


# --- what a newcomer hits: names, kinds and pickles of the public classes ---------------------

PUBLIC_ERRORS = sorted(
    name
    for name in mcpcore.__all__
    if isinstance(getattr(mcpcore, name), type) and issubclass(getattr(mcpcore, name), McpError)
)


def _globals(data: bytes) -> list[tuple[str, str]]:
    """The (module, name) pairs a pickle refers to."""
    import pickletools

    strings: list[str] = []
    found: list[tuple[str, str]] = []
    for opcode, arg, _ in pickletools.genops(data):
        if isinstance(arg, str):
            strings.append(arg)
        if opcode.name == "STACK_GLOBAL":
            found.append((strings[-2], strings[-1]))
    return found


def _instances() -> list[McpError]:
    return [
        McpError("plain"),
        ConfigError("bad", key="url"),
        ProtocolError("p"),
        LocalProtocolError("misuse"),
        mcpcore.InvalidState("start the client first"),
        mcpcore.InvalidArguments("arguments['x']"),
        mcpcore.InvalidArguments("arguments", message="call arguments must be a mapping"),
        mcpcore.InvalidValue("a call timeout must be a positive number of seconds"),
        RemoteProtocolError("peer"),
        LimitExceeded("max_pages", 3, "the number of pages"),
        HandshakeError("version"),
        TransportError("down"),
        CallTimeout("slow", tool="s/t", budget=1.5),
        mcpcore.MayHaveRun("reset; the server may have run tool 's/t'", tool="s/t", request_id=7),
        mcpcore.SealBroken("continuation", missing=True),
        BackendError("line\nnext\x1b[2J", tool="s/t"),
        mcpcore.Cancelled("cancelled by the caller", server="s"),
        Unavailable("refused", server="s"),
        UnknownTool("add", suggestions=("py/add",)),
        mcpcore.ResourceNotFound("a://gone", detail="-32002: no such resource"),
        mcpcore.SkillMismatch("pdf", "SKILL.md", "digest"),
        mcpcore.OutputSchemaViolation("structuredContent broke the schema", keyword="required", tool="s/t"),
        # A1-A5: the OAuth errors, each with the attributes it carries
        mcpcore.OAuthError("authorization failed"),
        mcpcore.DiscoveryError("no metadata"),
        mcpcore.ResourceMismatch("resource mismatch"),
        mcpcore.IssuerMismatch("issuer mismatch", expected="https://a", got="https://b"),
        mcpcore.AuthServerMetadataNotFound("no authorization server metadata"),
        mcpcore.InvalidMetadata("bad metadata"),
        mcpcore.DestinationRefused("refused", url="http://127.0.0.1/x", reason="loopback"),
        mcpcore.PkceNotSupported("no S256"),
        mcpcore.RegistrationError("registration refused", status=400, error="invalid_client_metadata"),
        mcpcore.ClientRegistrationRequired("needs a client id"),
        mcpcore.RegistrationUnusable("unusable registration"),
        mcpcore.AuthorizationResponseRejected("state mismatch"),
        mcpcore.AuthorizationDenied("denied", error="access_denied"),
        mcpcore.AuthorizationTimeout("too slow"),
        mcpcore.AuthorizationCancelled("cancelled"),
        mcpcore.AuthorizationRequired("sign in first"),
        mcpcore.TokenError("refused", error="invalid_grant", status=400),
        mcpcore.InsufficientScope("scope", challenged=("mcp:admin",)),
        mcpcore.MalformedResponse("not json"),
        mcpcore.RedirectRefused("redirected", status=302),
        mcpcore.OAuthTransientError("try later", status=503),
        mcpcore.HookError("the signer raised", hook="sign_assertion", outcome="raised"),
        mcpcore.InputError("the elicit hook raised", hook="elicit", outcome="raised"),
        mcpcore.UrlElicitationRequired("visit a URL first"),
        mcpcore.NotOffered("resources.subscribe", server="s", uri="a://x"),
        mcpcore.ServerError("the server said no"),
        mcpcore.RequestRefused("prompts/get", detail="-32602: unknown prompt"),
        mcpcore.ToolChanged(
            mcpcore.PinChanged("py/add", "add", "a" * 64, "b" * 64, ("description",), "{+x+}", True)
        ),
    ]


def test_X2_every_public_error_shows_as_mcpcore_in_a_traceback() -> None:
    """X2: tracebacks and reprs name ``mcpcore.BackendError``, not the private module."""
    import traceback

    assert {type(e).__name__ for e in _instances()} == set(PUBLIC_ERRORS)
    for name in PUBLIC_ERRORS:
        assert getattr(mcpcore, name).__module__ == "mcpcore", name
    try:
        raise BackendError("boom", tool="py/add")
    except BackendError as exc:
        shown = "".join(traceback.format_exception(exc))
    assert "mcpcore.BackendError: tool 'py/add' reported an error: boom" in shown
    assert "_errors" not in shown.splitlines()[-1]


def test_X2_errors_pickle_by_reference_with_message_and_attributes() -> None:
    """X2: an error crosses a process boundary intact (pickled as ``mcpcore.<Name>``)."""
    import pickle

    for error in _instances():
        data = pickle.dumps(error)
        assert ("mcpcore", type(error).__name__) in _globals(data)
        copy = pickle.loads(data)
        assert type(copy) is type(error)
        assert (str(copy), copy.args, vars(copy)) == (str(error), error.args, vars(error))


def test_X2_public_classes_named_mcpcore_resolve_and_keep_their_type_hints() -> None:
    """X2: every public class that shows as ``mcpcore.X`` is ``mcpcore.X`` (so pickles
    resolve), and its annotations still evaluate there."""
    import pickle
    import typing

    renamed = [
        name
        for name in mcpcore.__all__
        if isinstance(getattr(mcpcore, name), type) and getattr(mcpcore, name).__module__ == "mcpcore"
    ]
    assert {"Availability", "ClientOptions", "HttpClientEngine", "Catalogue", "UnknownTool"} <= set(renamed)
    for name in renamed:
        cls = getattr(mcpcore, name)
        assert pickle.loads(pickle.dumps(cls)) is cls
        typing.get_type_hints(cls)
    assert pickle.loads(pickle.dumps(mcpcore.Availability(False, "down"))) == mcpcore.Availability(False, "down")


def test_X2_caller_mistakes_are_also_the_builtin_kind() -> None:
    """X2: a caller's mistake is a LocalProtocolError and the built-in kind Python code catches."""
    assert isinstance(mcpcore.InvalidState("x"), RuntimeError)
    assert isinstance(mcpcore.InvalidArguments("arguments"), TypeError)
    assert isinstance(mcpcore.InvalidValue("x"), ValueError)
    for error in (mcpcore.InvalidState("x"), mcpcore.InvalidArguments("a"), mcpcore.InvalidValue("x")):
        assert isinstance(error, LocalProtocolError) and isinstance(error, McpError)


def test_K7_unknown_tool_names_what_was_probably_meant() -> None:
    """K7: the message says "did you mean ...?" when there is a likely id, and not otherwise."""
    assert str(UnknownTool("add", suggestions=("py/add",))) == "unknown tool 'add'; did you mean 'py/add'?"
    several = UnknownTool("add", suggestions=("a/add", "b/add"))
    assert str(several) == "unknown tool 'add'; did you mean one of 'a/add', 'b/add'?"
    assert several.suggestions == ("a/add", "b/add")
    assert str(UnknownTool("nope")) == "unknown tool 'nope'" and UnknownTool("nope").suggestions == ()


def test_H7_an_html_error_page_is_summed_up_from_its_head_alone() -> None:
    """H7, P6: an HTML error page is summed up from its first 4 KiB, where a title
    sits: a hostile page of unclosed tags cannot make the summary rescan 64 KiB
    from every '<' (seconds of the caller's CPU), and a title past that point is
    never read."""
    from mcpcore.base._failure import status_reason

    late = "<html><body>" + "x" * 5000 + "<title>Late</title></body></html>"
    reason = status_reason("https://h.example/mcp", 500, late)
    assert "Late" not in reason and reason.startswith("https://h.example/mcp answered HTTP 500: ")
    early = "<html><head><title>Bad Gateway</title></head><body>" + "<p>" * 20000 + "</body></html>"
    assert status_reason("https://h.example/mcp", 502, early) == (
        "https://h.example/mcp answered HTTP 502: Bad Gateway (an HTML page)"
    )
