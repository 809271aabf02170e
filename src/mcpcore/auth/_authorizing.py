"""OAuth joined to the HTTP engine: who gets a token, who waits, who is sent again (A1, A3).

``AuthLayer`` sits between ``HttpMapping`` and the driver inside
``HttpClientEngine`` when the client was given ``auth=AuthOptions(...)``. It
owns the exchange numbers the driver sees (the wire ids): a mapping exchange
goes out under its own number the first time, an exchange sent again after a
401 and every request of the OAuth flow get numbers of their own, so the
driver never has to tell them apart and the mapping never sees a 401 it was
not meant to. Per MCP request it keeps the flow's ``RequestTicket``:

* before a request leaves, ``OAuthFlow.prepare`` gives the ``Authorization``
  header, or says wait (a refresh or an authorization is in flight: the
  request is parked; the mapping's deadlines keep running, so a call waits
  within its own deadline), or send it bare;
* a 401, or a 403 with ``insufficient_scope``, goes to ``OAuthFlow.challenge``
  instead of the mapping: send again now, park, or fail the request with the
  flow's error (O60 bounds the attempts);
* when the flow says ``Authorized`` the parked requests go out with the new
  token; on ``AuthFailed`` they fail with its error.

The flow's own requests become ordinary ``HttpRequest`` actions (redirects are
never followed by a driver anyway, H5/O62) with a bound the layer enforces;
the host hooks come out as ``OpenAuthorizationUrl`` / ``SignAssertion``, the
store as ``SaveTokens`` / ``DeleteTokens`` / ``SaveClient`` / ``DeleteClient``
and ``LockTokens`` / ``UnlockTokens`` (``apply_to_store`` performs those on any
``TokenStore`` and answers what came of them, a ``StoreOutcome``; the store
and its protocols are ``_store``'s).

Stores shared between runs (R4): a refresh happens under the store's refresh
lock, re-reads the store first (another run's newer tokens are taken instead
of spending a refresh token that may have rotated away), writes back only in
place of the set it started from (compare-and-swap), and a refused refresh
deletes only that set. A ``SharedTokenStore`` (one with ``lock_tokens``) does
this atomically; for a plain ``TokenStore`` ``apply_to_store`` checks by
reading first, which holds within one process but not between two.

Host hooks (D2): the layer numbers every hook action it lets out (its
``attempt``), bounds it with a deadline of its own (the person's wait for
``authorize``, ``AuthOptions.hook_timeout`` for the signer and the store) and
gives each report one outcome: ``hook_answered`` with a usable answer moves
the flow on; an unusable answer, a raise, a missing hook or no answer by the
deadline fail the flow with ``HookError`` (the ``authorize`` hook's raise
stays a person's ``AuthorizationCancelled``), or for the store, keep the
tokens in memory and log it; a report for an attempt the layer has moved on
from (superseded, past its deadline, after close) changes nothing. Store
actions go out one at a time, in order; requests wait while new tokens are
being saved, so tokens are stored before they are used (O48), and for no
other store action (the refresh lock, a client, a deletion: R5, R6).

Clocks: the engine's ``now`` is monotonic; tokens carry wall-clock expiry
(O67). The driver gives the difference once (``wall_offset`` = wall clock
minus its monotonic clock) and the layer adds it, so the core still reads no
clock.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from os import PathLike
from typing import TYPE_CHECKING, Literal

from ..base._errors import InvalidValue, McpError
from ..base._events import AbortExchange, HttpRequest
from ..base._failure import FailureKind, TransportFailure
from ..base._record import record
from ._oauth import (
    AuthFailed,
    AuthorizationCancelled,
    AuthorizationDenied,
    AuthorizationRequired,
    AuthorizationTimeout,
    Authorized,
    AuthRequest,
    DeleteClient,
    DeleteTokens,
    DpopKey,
    Fail,
    HookError,
    IdentityProvider,
    LockTokens,
    OAuthConfig,
    OAuthError,
    OAuthFlow,
    OpenAuthorizationUrl,
    PreRegisteredClient,
    ProvideAssertion,
    Purpose,
    RequestTicket,
    Retry,
    SaveClient,
    SaveTokens,
    SignAssertion,
    UnlockTokens,
    Wait,
    fresh_copy,
)
from ._oauth_types import DEFAULT_SUBJECT
from ._store import AuthAction, StoreAction, StoreOutcome, TokenStore
from ._store import MemoryTokenStore as MemoryTokenStore  # for the engine

if TYPE_CHECKING:
    from ..wire._http import HttpMapping
    from ._hooks import HookFailure

# The layer's own names, and the store's the engine takes from here (``_store``).
__all__ = ["AuthAction", "AuthLayer", "AuthOptions", "MemoryTokenStore", "TokenStore"]

_log = logging.getLogger("mcpcore.oauth")

# Numbers for exchanges the layer starts itself, far above any the mapping uses.
_OWN_IDS = 1 << 40
# The redirect URI a client without an ``authorize`` hook registers with: it is
# never used (such a client never sends a person to authorize), only well formed.
UNUSED_REDIRECT = "http://127.0.0.1/callback"


@record(frozen=True, slots=True, kw_only=True)
class AuthOptions:
    """OAuth for one remote server (A2, A3, A5): the ``auth=`` option of ``McpClient``.

    ``store``
        A ``TokenStore``; the default keeps tokens in memory for the client's life.
    ``redirect_uri``
        Where the authorization server sends the person back; the driver's
        ``authorize`` hook must be able to receive it (a loopback listener).
        Needed only with an ``authorize`` hook.
    ``client_metadata_url``
        An https URL of this client's metadata document (CIMD, O25), preferred
        over dynamic registration when the server supports it.
    ``client``
        A pre-registered client (``PreRegisteredClient``): preferred over both.
    ``grant``
        ``"authorization_code"`` (a person signs in), ``"client_credentials"``
        (machine to machine, with ``client``'s secret or a signed JWT, A5),
        ``"jwt_bearer"`` (workload identity, N3: the ``assertion`` hook's
        platform token is the grant) or ``"enterprise"`` (N2: the ``assertion``
        hook's identity assertion is exchanged at ``identity_provider`` for an
        ID-JAG, which is the grant). The last two need ``client`` and no person.
    ``assertion``
        N2, N3: where the assertion comes from, read anew for every grant: a
        file path (a platform's projected token file; the driver reads it), or
        a hook of the driver's kind given the ``ProvideAssertion`` and
        returning the assertion's text.
    ``identity_provider``
        N2: the ``IdentityProvider`` (its token endpoint, this client's id and
        secret there, and the kind of assertion the hook gives).
    ``dpop``, ``dpop_key``
        N1: ``True`` sends DPoP proofs and asks for DPoP-bound tokens; ``"auto"``
        does so when the authorization server lists the key's algorithm in its
        ``dpop_signing_alg_values_supported``; ``False`` (the default) never.
        ``dpop_key`` is the key (a ``DpopKey``); without one the driver makes an
        ES256 key with ``mcpcore_jwt``. A key that can ``export()`` is kept in
        the store with the tokens bound to it, and a client given no key of its
        own takes up the stored one at start, so its tokens stay usable after
        a restart; a key the host gives always wins.
    ``scope``
        Scopes to ask for besides those the server's challenge names (O19:
        without this, the challenge's, else the resource's ``scopes_supported``).
    ``client_name``, ``user_wait``, ``allow_insecure_http``
        The name given when registering; how long a person has to finish
        signing in (O41); plain http to a non-loopback authorization server.
    ``hook_timeout``
        Seconds the ``sign_assertion`` hook and each ``TokenStore`` method may
        take (D2): a signer that has not answered by then fails the requests
        waiting for it, with ``HookError``; the next request asks it again.
    ``authorize``
        The ``authorize`` hook, for a client not given one of its own
        (``authorize=``): a ready sign-in (``mcpcore_signin.browser_auth()``)
        brings its hook and its ``redirect_uri`` together. Of the driver's kind
        (a coroutine function for ``mcpcore_anyio``); the core never calls it.
    ``subject``
        Whose tokens these are (W1): the host's user or tenant id, part of every
        key the store is given (``TokenKey.subject``), so a store shared by many
        users never hands one user's tokens to another. ``DEFAULT_SUBJECT`` (a
        single-user host) is not passed to the store's methods, so a store
        written before subjects keeps working.
    """

    store: TokenStore | None = field(default=None, repr=False)
    redirect_uri: str | None = None
    client_metadata_url: str | None = None
    client: PreRegisteredClient | None = None
    grant: Literal["authorization_code", "client_credentials", "jwt_bearer", "enterprise"] = (
        "authorization_code"
    )
    scope: str | None = None
    client_name: str = "mcpcore"
    user_wait: float = 300.0
    allow_insecure_http: bool = False
    hook_timeout: float = 30.0
    authorize: Callable[[str, str], object] | None = field(default=None, repr=False)
    assertion: str | PathLike[str] | Callable[[ProvideAssertion], object] | None = field(
        default=None, repr=False
    )
    identity_provider: IdentityProvider | None = None
    dpop: bool | Literal["auto"] = False
    dpop_key: DpopKey | None = field(default=None, repr=False)
    subject: str = DEFAULT_SUBJECT

    def config(self, server_url: str, *, interactive: bool) -> OAuthConfig:
        """The flow's configuration for ``server_url`` (raises ``InvalidValue``)."""
        if interactive and self.grant == "authorization_code" and self.redirect_uri is None:
            raise InvalidValue("auth= with an authorize hook needs a redirect_uri")
        if self.grant in ("jwt_bearer", "enterprise") and self.assertion is None:
            raise InvalidValue(f"the {self.grant} grant needs an assertion= (a path or a hook)")
        if not isinstance(self.dpop, bool) and self.dpop != "auto":
            raise InvalidValue('dpop must be True, False or "auto"')
        timeout = self.hook_timeout
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidValue("hook_timeout must be a positive number of seconds")
        if not isinstance(self.subject, str) or not self.subject:
            raise InvalidValue("subject must be a non-empty string")
        return OAuthConfig(
            server_url=server_url,
            redirect_uri=self.redirect_uri or UNUSED_REDIRECT,
            client_name=self.client_name,
            client_metadata_url=self.client_metadata_url,
            preregistered=self.client,
            grant=self.grant,
            scope=self.scope,
            user_wait=self.user_wait,
            allow_insecure_http=self.allow_insecure_http,
            # A store given here may be shared (a hub's clients): with a sign-in
            # lock, its clients sign in one at a time per issuer (R4).
            serialize_sign_ins=callable(getattr(self.store, "lock_sign_in", None)),
            dpop=self.dpop,
            dpop_key=self.dpop_key,
            identity_provider=self.identity_provider,
            subject=self.subject,
        )


@record(slots=True)
class _Held:
    """One MCP exchange of the mapping as the layer knows it."""

    request: HttpRequest  # as the mapping asked for it, without authorization
    ticket: RequestTicket
    wire: int | None = None  # the number it went out under; None while parked
    sent: bool = False  # it went out once: later sends get numbers of their own
    for_store: bool = False  # parked only until new tokens are stored (O48)


@record(slots=True)
class _Attempt:
    """One hook action let out (D2): what it asked, and until when an answer counts."""

    action: AuthAction
    deadline: float  # the engine's clock


_FLOW_HOOKS = (OpenAuthorizationUrl, SignAssertion, ProvideAssertion)
_STORE_ACTIONS = (SaveTokens, DeleteTokens, SaveClient, DeleteClient, LockTokens, UnlockTokens)


class AuthLayer:
    """See the module docstring. ``HttpClientEngine`` holds one when auth is on."""

    def __init__(
        self,
        flow: OAuthFlow,
        http: HttpMapping,
        *,
        wall_offset: float,
        interactive: bool,
        hook_timeout: float = 30.0,
    ) -> None:
        self.flow = flow
        self._http = http
        self._offset = wall_offset
        self._interactive = interactive
        self._hook_timeout = hook_timeout
        # D2: the hook actions let out and not answered yet, by attempt number.
        self._attempts: dict[int, _Attempt] = {}
        self._last_attempt = 0
        # Store actions go out one at a time, in order; requests wait for a save (O48).
        self._store_queue: deque[StoreAction] = deque()
        self._store_out: int | None = None  # the attempt of the write out now
        self._next_own = _OWN_IDS
        self._held: dict[int, _Held] = {}  # mapping exchange id -> what it is
        self._wire_to_mcp: dict[int, int] = {}  # a resent exchange's wire id -> mapping id
        self._wire_to_flow: dict[int, int] = {}  # wire id -> the flow's exchange id
        self._flow_to_wire: dict[int, int] = {}
        self._flow_bounds: dict[int, float] = {}  # wire id -> when the flow's request times out
        # Mapping ids aborted here: their late reports are ignored. The layer's own
        # ids need no entry (never reused, and forgotten once aborted), so this
        # holds at most the mapping's live exchanges.
        self._dropped: set[int] = set()
        self._out: list[HttpRequest | AbortExchange | AuthAction] = []
        # A person declined, gave up or ran out of time: they are not asked again
        # on their own (a start-up retry every few seconds would re-open the
        # browser each time) until the host calls ``login``.
        self._declined: OAuthError | None = None
        self.authorized = False  # a token arrived since the engine last looked
        # F7: once closing, no flow starts (no refresh, no person asked); a 401 on
        # the last requests (the DELETE) is an ordinary error of that request.
        self._closing = False
        # F8: error text the mapping words from server bodies never shows a secret
        configured = http.redact
        http.redact = lambda text: flow.scrub(configured(text))

    # --- what the engine asks -------------------------------------------------------

    def take_actions(self) -> list[HttpRequest | AbortExchange | AuthAction]:
        out, self._out = self._out, []
        return out

    def next_deadline(self) -> float | None:
        times = list(self._flow_bounds.values())
        times += [attempt.deadline for attempt in self._attempts.values()]
        wall = self.flow.next_deadline()
        if wall is not None:
            times.append(wall - self._offset)
        return min(times) if times else None

    def handle_timer(self, now: float) -> None:
        for wire, at in list(self._flow_bounds.items()):
            if now >= at:
                flow_id = self._forget_flow_wire(wire)
                self._out.append(AbortExchange(exchange_id=wire))
                if flow_id is not None:
                    self.flow.response_failed(
                        flow_id, TransportFailure(FailureKind.TIMEOUT), self._wall(now)
                    )
        for number, attempt in list(self._attempts.items()):
            if now >= attempt.deadline and self._attempts.pop(number, None) is not None:
                self._hook_late(attempt.action, now)
        self.flow.handle_timer(self._wall(now))

    def step(self, now: float) -> bool:
        """Route the mapping's new actions and the flow's outputs; True if the
        mapping got something to act on (a request failed or was let go)."""
        for action in self._http.take_actions():
            if isinstance(action, AbortExchange):
                self._mapping_abort(action.exchange_id)
            else:
                self._mapping_request(action, now)
        return self._drain_flow(now)

    def close(self, now: float) -> None:
        self._closing = True
        self._drop_flow_hooks()  # their answers come too late now
        self.flow.cancel("the client was closed")

    # --- the driver's reports -----------------------------------------------------------
    # Each returns the mapping exchange id to hand the report to, or None when the
    # layer consumed it.

    def response_started(
        self, wire: int, status: int, headers: Sequence[tuple[bytes, bytes]], now: float
    ) -> int | None:
        flow_id = self._wire_to_flow.get(wire)
        if flow_id is not None:
            self.flow.response_started(flow_id, status, headers, self._wall(now))
            return None
        mcp = self._mcp_of(wire)
        if mcp is None:
            return None
        held = self._held.get(mcp)
        if held is not None:
            self.flow.note_response(held.request.url, headers)  # N1: a DPoP-Nonce
        if status not in (401, 403) or self._closing:
            return mcp
        if held is None:
            return mcp
        for name, value in held.request.headers:
            if name.lower() == b"mcp-protocol-version":
                self.flow.use_protocol_version(value.decode("ascii", "replace"))
        verdict = self.flow.challenge(held.ticket, status, headers, self._wall(now))
        if verdict is None:
            return mcp
        # The 401/403 is the flow's: stop reading it; the mapping never sees it.
        self._drop_wire(wire)
        if isinstance(verdict, Fail):
            self._fail(mcp, verdict.error, now)
        elif isinstance(verdict, Retry):
            self._send(mcp, held, now)
        else:
            held.wire = None  # parked until Authorized / AuthFailed
        return None

    def response_data(self, wire: int, data: bytes, now: float) -> int | None:
        flow_id = self._wire_to_flow.get(wire)
        if flow_id is not None:
            self.flow.response_data(flow_id, data, self._wall(now))
            return None
        return self._mcp_of(wire)

    def response_ended(self, wire: int, now: float) -> int | None:
        flow_id = self._forget_flow_wire(wire)
        if flow_id is not None:
            self.flow.response_ended(flow_id, self._wall(now))
            return None
        return self._ended(wire)

    def request_sent(self, wire: int) -> int | None:
        """U3: the request of ``wire`` went out whole: the mapping's exchange it
        carries (None for the flow's own requests, or one dropped)."""
        if wire in self._wire_to_flow:
            return None
        return self._mcp_of(wire)

    def response_failed(self, wire: int, failure: TransportFailure, now: float) -> int | None:
        flow_id = self._forget_flow_wire(wire)
        if flow_id is not None:
            self.flow.response_failed(flow_id, failure, self._wall(now))
            return None
        return self._ended(wire)

    # --- host hooks (D2) ---------------------------------------------------------------------

    def hook_answered(self, attempt: int, value: object, now: float) -> None:
        """The hook of ``attempt`` returned ``value``: its outcome (see the module docstring)."""
        held = self._attempts.pop(attempt, None)
        if held is None:
            _log.debug("oauth: a late answer to hook attempt %d was ignored", attempt)
            return
        action = held.action
        if isinstance(action, _STORE_ACTIONS):
            self._store_answered(action, value, now)
            self._store_done(now)
        elif not isinstance(value, str):
            self._hook_error(action, "unusable", f"answered a {type(value).__name__}, not a str")
        elif isinstance(action, OpenAuthorizationUrl):
            self.flow.receive_callback(value, self._wall(now))
        elif isinstance(action, ProvideAssertion):
            try:
                self.flow.receive_identity(action.request_id, value, self._wall(now))
            except InvalidValue:
                self._hook_error(action, "unusable", "answered a str that is not one token")
        else:
            assert isinstance(action, SignAssertion)
            try:
                self.flow.receive_assertion(action.request_id, value, self._wall(now))
            except InvalidValue:
                self._hook_error(action, "unusable", "answered a str that is not a compact JWS")

    def hook_failed(self, attempt: int, failure: HookFailure, now: float) -> None:
        """The hook of ``attempt`` raised, or was never given (``failure``)."""
        held = self._attempts.pop(attempt, None)
        if held is None:
            _log.debug("oauth: a late failure of hook attempt %d was ignored", attempt)
            return
        action = held.action
        # HookFailure.MISSING (or its value); any other report is a raise.
        outcome = "missing" if getattr(failure, "value", failure) == "missing" else "raised"
        if isinstance(action, _STORE_ACTIONS):
            _log.warning(
                "the token store's %s %s: what it was to keep is kept in memory only",
                _store_method(action),
                "raised" if outcome == "raised" else "is missing",
            )
            self._lock_unavailable(action, now)
            self._store_done(now)
        elif isinstance(action, OpenAuthorizationUrl) and outcome == "raised":
            # The person's side gave up (closed the page): not asked again on its own.
            self.flow.cancel("the authorize hook failed")
        elif outcome == "raised":
            self._hook_error(action, "raised", "raised an exception")
        else:
            self._hook_error(action, "missing", "was not given")

    def login(self, now: float) -> None:
        """The host asks to sign in now: a person may be asked again."""
        self._declined = None
        if not self.flow.busy:
            self.flow.login(self._wall(now))

    # --- plumbing ---------------------------------------------------------------------------

    def _wall(self, now: float) -> float:
        return now + self._offset

    def _own_id(self) -> int:
        self._next_own += 1
        return self._next_own

    def _mcp_of(self, wire: int) -> int | None:
        if wire in self._dropped:
            return None
        if wire >= _OWN_IDS:
            return self._wire_to_mcp.get(wire)
        return wire

    def _mapping_request(self, request: HttpRequest, now: float) -> None:
        held = _Held(request=request, ticket=RequestTicket())
        self._held[request.exchange_id] = held
        self._send(request.exchange_id, held, now)

    def _send(self, mcp: int, held: _Held, now: float) -> None:
        verdict: list[tuple[bytes, bytes]] | Wait | None
        method, url = held.request.method, held.request.url
        if self._closing:
            verdict = self.flow.current_headers(method, url, self._wall(now)) or None
        else:
            verdict = self.flow.prepare_headers(held.ticket, method, url, self._wall(now))
        held.for_store = False
        if isinstance(verdict, Wait):
            held.wire = None
            return
        if not self._closing and self._saving_tokens():
            held.wire, held.for_store = None, True  # O48: stored before it is used
            return
        request = held.request
        if verdict is not None:
            # The token replaces a configured Authorization header: one, never two
            # (and a DPoP proof of its own, N1).
            ours = {name for name, _ in verdict}
            kept = [(k, v) for k, v in request.headers if k.lower() not in ours]
            request = replace(request, headers=[*kept, *verdict])
        wire = mcp
        if held.sent:
            wire = self._own_id()
            self._wire_to_mcp[wire] = mcp
            request = replace(request, exchange_id=wire)
        held.wire, held.sent = wire, True
        self._out.append(request)

    def _drop_wire(self, wire: int) -> None:
        self._out.append(AbortExchange(exchange_id=wire))
        if wire < _OWN_IDS:
            self._dropped.add(wire)
        self._wire_to_mcp.pop(wire, None)

    def _mapping_abort(self, mcp: int) -> None:
        held = self._held.pop(mcp, None)
        self._dropped.discard(mcp)
        if held is None:
            return  # failed here already, or over: nothing of it is out
        if held.wire is not None:
            self._out.append(AbortExchange(exchange_id=held.wire))
            if held.wire != mcp:
                self._wire_to_mcp.pop(held.wire, None)

    def _ended(self, wire: int) -> int | None:
        """The driver is done with ``wire``: the mapping exchange to tell, if any."""
        mcp = self._mcp_of(wire)
        if mcp is None:
            # Numbers of the layer's own are never used again. A mapping's number
            # stays refused while its exchange lives: it went out again under
            # another, and a slow driver may still report the first one.
            if wire >= _OWN_IDS:
                self._dropped.discard(wire)
            return None
        held = self._held.get(mcp)
        if held is not None and held.wire == wire:
            del self._held[mcp]
            self._dropped.discard(mcp)
        self._wire_to_mcp.pop(wire, None)
        return mcp

    def _fail(self, mcp: int, error: McpError, now: float) -> None:
        self._held.pop(mcp, None)
        self._dropped.discard(mcp)
        self._http.fail_exchange(mcp, error, now)

    def _forget_flow_wire(self, wire: int) -> int | None:
        flow_id = self._wire_to_flow.pop(wire, None)
        if flow_id is not None:
            self._flow_to_wire.pop(flow_id, None)
            self._flow_bounds.pop(wire, None)
        return flow_id

    def _drain_flow(self, now: float) -> bool:
        moved = False
        flow = self.flow
        while True:
            actions = flow.take_actions()
            events = flow.take_events()
            if not actions and not events:
                return moved
            for action in actions:
                self._flow_action(action, now)
            for event in events:
                self._drop_flow_hooks()  # the run is over: its hooks' answers are late
                if isinstance(event, Authorized):
                    self.authorized = True
                    self._release(now)
                elif isinstance(event, AuthFailed):
                    error = event.error
                    if isinstance(
                        error, (AuthorizationDenied, AuthorizationCancelled, AuthorizationTimeout)
                    ) or (isinstance(error, HookError) and error.hook == "authorize"):
                        self._declined = error
                    for mcp, held in list(self._held.items()):
                        if held.wire is None and not held.for_store:
                            self._fail(mcp, fresh_copy(error), now)
                            moved = True

    def _no_person(self) -> AuthorizationRequired | None:
        """Why no person can be asked now (no hook, or they declined), if so."""
        if not self._interactive:
            return AuthorizationRequired(
                f"{self._http.display_url} needs authorization, and this client has no "
                "authorize hook to ask a person: sign in first"
            )
        if self._declined is not None:
            return AuthorizationRequired(
                f"{self._http.display_url} needs authorization, and the last sign-in "
                f"was not completed ({type(self._declined).__name__}): call login() "
                "to ask again"
            )
        return None

    def _flow_action(self, action: object, now: float) -> None:
        if (
            isinstance(action, AuthRequest)
            and action.purpose is Purpose.REGISTER
            and self.flow.config.grant == "authorization_code"
            and (error := self._no_person()) is not None
        ):
            # A client that cannot ask a person registers nothing (no client
            # left behind at the authorization server on every attempt).
            self.flow.cancel("no person to ask", error=error)
        elif isinstance(action, AuthRequest):
            wire = self._own_id()
            self._wire_to_flow[wire] = action.exchange_id
            self._flow_to_wire[action.exchange_id] = wire
            if action.timeout is not None:
                self._flow_bounds[wire] = now + action.timeout
            self._out.append(
                HttpRequest(
                    exchange_id=wire,
                    method=action.method,
                    url=action.url,
                    headers=action.headers,
                    body=action.body,
                    timeout=action.timeout,
                    replayable=action.method == "GET",  # a token POST may have been spent
                )
            )
        elif isinstance(action, AbortExchange):
            aborted = self._flow_to_wire.get(action.exchange_id)
            if aborted is not None:
                self._forget_flow_wire(aborted)
                self._out.append(AbortExchange(exchange_id=aborted))
        elif isinstance(action, OpenAuthorizationUrl) and (error := self._no_person()):
            self.flow.cancel("no person to ask", error=error)
        elif isinstance(action, _FLOW_HOOKS):
            self._drop_flow_hooks()  # one at a time: a new one supersedes the last
            if isinstance(action, OpenAuthorizationUrl):
                deadline = action.deadline - self._offset  # the person's wait (O41)
            else:
                deadline = now + self._hook_timeout
            self._out.append(self._let_out(action, deadline))
        elif isinstance(action, _STORE_ACTIONS):
            self._store_queue.append(action)
            self._next_store(now)

    # --- hook attempts (D2) ------------------------------------------------------------------

    def _let_out(self, action: AuthAction, deadline: float) -> AuthAction:
        """``action`` with an attempt number of its own, bounded by ``deadline``."""
        self._last_attempt += 1
        self._attempts[self._last_attempt] = _Attempt(action=action, deadline=deadline)
        return replace(action, attempt=self._last_attempt)

    def _drop_flow_hooks(self) -> None:
        for number, attempt in list(self._attempts.items()):
            if isinstance(attempt.action, _FLOW_HOOKS):
                del self._attempts[number]

    def _hook_late(self, action: AuthAction, now: float) -> None:
        """No answer by the attempt's deadline."""
        if isinstance(action, _STORE_ACTIONS):
            _log.warning(
                "the token store's %s did not answer within %g s: what it was to keep "
                "is kept in memory only",
                _store_method(action),
                self._hook_timeout,
            )
            self._lock_unavailable(action, now)
            self._store_done(now)
        elif isinstance(action, (SignAssertion, ProvideAssertion)):
            self._hook_error(action, "late", f"did not answer within {self._hook_timeout:g} s")
        # OpenAuthorizationUrl: the flow's own wait for the person ends now (O41).

    def _hook_error(self, action: AuthAction, outcome: str, what: str) -> None:
        """A flow hook gave no usable answer: the flow fails with a ``HookError``."""
        name = (
            "authorize"
            if isinstance(action, OpenAuthorizationUrl)
            else "assertion"
            if isinstance(action, ProvideAssertion)
            else "sign_assertion"
        )
        _log.info("the %s hook %s", name, what)
        self.flow.cancel(
            f"the {name} hook {what}",
            error=HookError(f"the {name} hook {what}", hook=name, outcome=outcome),
        )

    def _saving_tokens(self) -> bool:
        """O48: new tokens are on their way to the store (a ``SaveTokens`` out or
        queued): requests wait for it. Other store actions (the refresh lock, a
        client, a deletion) hold back no request (R5, R6)."""
        out = None if self._store_out is None else self._attempts.get(self._store_out)
        if out is not None and isinstance(out.action, SaveTokens):
            return True
        return any(isinstance(action, SaveTokens) for action in self._store_queue)

    def _next_store(self, now: float) -> None:
        if self._store_out is None and self._store_queue:
            action = self._store_let_out(self._store_queue.popleft(), now)
            self._store_out = action.attempt
            self._out.append(action)

    def _store_let_out(self, action: StoreAction, now: float) -> StoreAction:
        out = self._let_out(action, now + self._hook_timeout)
        assert isinstance(out, _STORE_ACTIONS)
        return out

    def _store_answered(self, action: StoreAction, value: object, now: float) -> None:
        """R4: a lock's answer goes to the flow; a write that did not apply (another
        run stored newer tokens first) is logged: theirs are kept."""
        if not isinstance(value, StoreOutcome):
            # A store called directly, not through apply_to_store: it wrote.
            value = StoreOutcome(True, None)
            if isinstance(action, LockTokens):
                self._lock_unavailable(action, now)
                return
        if isinstance(action, LockTokens):
            self.flow.lock_answered(action.lock_id, value.applied, value.current, self._wall(now))
        elif not value.applied:
            _log.debug(
                "oauth: the token store holds tokens another run stored meanwhile; "
                "its %s left them as they are",
                _store_method(action),
            )

    def _lock_unavailable(self, action: StoreAction, now: float) -> None:
        """The store's refresh lock raised or did not answer: the refresh goes on
        without it (refreshing unlocked beats never refreshing), reading nothing."""
        if isinstance(action, LockTokens):
            self.flow.lock_answered(action.lock_id, True, None, self._wall(now))

    def _store_done(self, now: float) -> None:
        self._store_out = None
        self._next_store(now)
        if not self._saving_tokens():  # a lock given back next holds back no request
            self._release(now)

    def _release(self, now: float) -> None:
        """Send the parked requests that may go now (the others park again). Not
        while the flow has news not yet read: a run that just ended (a lock's answer
        can end it) sends them on ``Authorized`` or fails them on ``AuthFailed``."""
        if self.flow.has_events:
            return
        for mcp, held in list(self._held.items()):
            if held.wire is None:
                self._send(mcp, held, now)


def _store_method(action: StoreAction) -> str:
    if isinstance(action, (LockTokens, UnlockTokens)) and action.sign_in is not None:
        return "lock_sign_in" if isinstance(action, LockTokens) else "unlock_sign_in"
    return {
        SaveTokens: "set_tokens",
        DeleteTokens: "delete_tokens",
        SaveClient: "set_client",
        DeleteClient: "delete_client",
        LockTokens: "lock_tokens",
        UnlockTokens: "unlock_tokens",
    }[type(action)]
