"""What a session listens for: the 2026-07-28 ``subscriptions/listen`` stream
(M63–M68) and the host's resource subscriptions in both eras (F2).

``Listener`` owns the one listen stream of a modern session. Its filter is
worked out from what the host wants: ``toolsListChanged`` with
``auto_refresh`` (or an ``on_list_changed`` hook) when the server's tools may
change, ``resourcesListChanged`` / ``promptsListChanged`` for an
``on_list_changed`` hook when the server declares them, and
``resourceSubscriptions`` with the URIs the host subscribed to. A result ends
the stream gracefully; a broken stream is opened again after the backoff,
with a fresh listing, since nothing is replayed (M67). The backoff grows
across acknowledgements: a server that acknowledges the stream and then breaks
it each time is not re-opened (and re-listed) every ``backoff_first``
forever; only a stream that stayed up a healthy while (``backoff_max``, the
longest wait between attempts) starts the backoff from its first step again.
Closing the client closes the stream (M68). When the filter changes, a stream
with the new filter is opened first and the old one is closed once the new one
is acknowledged, so no notification falls in a gap between them.

``ResourceSubscriptions`` owns the set of URIs the host subscribed to. In the
handshake era each change is a ``resources/subscribe`` / ``resources/unsubscribe``
request (two ``RequestKind`` rows), sent only when the server declares
``resources.subscribe`` (else ``NotOffered``, nothing sent). At 2026-07-28 a
change re-opens the listen stream with the new set, and the host's request
ends when the server acknowledges it (``NotOffered`` when the server leaves
the URI out of what it agreed to). A change made while another waits folds
into the same new stream; a change that fails, times out or is cancelled takes
out only a URI it added itself. The set belongs to the client, not to one
session: after a new session (an expired one, H6) or a restart the handshake
era subscribes to each URI again (and a subscribe answered for a session
since replaced is sent on the new one), and a new listen stream carries them
all. A URI a re-opened stream's server leaves out stays wanted, and is logged.

Notifications about resources and prompts reach the host as events:
``ResourceUpdated`` (with ``on_resource_updated=``; without it, logged at
debug and dropped), ``ResourcesListChanged`` and ``PromptsListChanged``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..base._backoff import backoff_delay
from ..base._errors import (
    CallTimeout,
    InvalidArguments,
    InvalidState,
    McpError,
    NotOffered,
    RemoteProtocolError,
)
from ..base._escape import excerpt
from ..base._events import (
    CallFailed,
    PromptsListChanged,
    RequestSucceeded,
    ResourcesListChanged,
    ResourceUpdated,
)
from ..base._record import record
from ..wire._requests import Pending, RequestKind, refused_by_server, register

if TYPE_CHECKING:
    from ._port import SessionPort

__all__ = ["LISTEN", "SUBSCRIBE", "UNSUBSCRIBE", "Listener", "ResourceSubscriptions"]

_log = logging.getLogger("mcpcore.session")

LISTEN = register(RequestKind(method="subscriptions/listen", typed_result=False))


def _nothing(result: dict[str, Any], pending: Pending) -> object:
    return None


# F2, handshake era only (M71: never sent at 2026-07-28). Each changes what the
# server sends, and sending one twice is harmless: sent again after a broken stream.
SUBSCRIBE = register(
    RequestKind(
        method="resources/subscribe",
        parse=_nothing,
        refused=refused_by_server,
        resend=True,
        name_param="uri",
    )
)
UNSUBSCRIBE = register(
    RequestKind(
        method="resources/unsubscribe",
        parse=_nothing,
        refused=refused_by_server,
        resend=True,
        name_param="uri",
    )
)

_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
# The most URIs one client may subscribe to: each is carried on every listen request.
MAX_SUBSCRIPTIONS = 1000


def _declares(capabilities: Mapping[str, Any], feature: str, flag: str) -> bool:
    entry = capabilities.get(feature)
    return isinstance(entry, Mapping) and entry.get(flag) is True


class Listener:
    """The one listen stream of a session (see the module docstring)."""

    def __init__(self, session: SessionPort) -> None:
        self._s = session
        # The host's subscriptions are this stream's filter; each reaches the other.
        self.subscriptions = ResourceSubscriptions(session, self)
        self.listen_id: int | None = None
        # Streams with an older filter, closed once the newest one is acknowledged.
        self._retiring: list[int] = []
        self.acknowledged_id: int | None = None
        self._reopen_at: float | None = None
        self._failures = 0
        # M67: when the current stream was acknowledged (None: not yet, or none).
        self._up_since: float | None = None

    # The host's subscription changes waiting for a stream's acknowledgement are
    # this stream's too: their deadlines, ids and cancelling go through here.

    def next_deadline(self) -> float | None:
        waiting = self.subscriptions.next_deadline()
        if waiting is None or self._reopen_at is None:
            return waiting if self._reopen_at is None else self._reopen_at
        return min(waiting, self._reopen_at)

    @property
    def calls(self) -> list[int]:
        return self.subscriptions.call_ids

    def cancel(self, call_id: int) -> bool:
        return self.subscriptions.cancel(call_id)

    def handle_timer(self, now: float) -> None:
        self.subscriptions.handle_timer(now)
        if self._reopen_at is not None and now >= self._reopen_at:
            self._reopen_at = None
            if self._s.ready and self.listen_id is None and self.wanted():
                self.open(now, relist=True)

    def wanted(self) -> dict[str, Any]:
        """M63, F2: the filter the host's wishes and the server's capabilities call for."""
        s = self._s
        options, capabilities = s.options, s.server_capabilities
        wanted: dict[str, Any] = {}
        if (options.auto_refresh or options.list_events) and _declares(
            capabilities, "tools", "listChanged"
        ):
            wanted["toolsListChanged"] = True
        if options.list_events and _declares(capabilities, "resources", "listChanged"):
            wanted["resourcesListChanged"] = True
        if options.list_events and _declares(capabilities, "prompts", "listChanged"):
            wanted["promptsListChanged"] = True
        if self.subscriptions.uris:
            wanted["resourceSubscriptions"] = list(self.subscriptions.uris)
        return wanted

    def acknowledged(self, params: Mapping[str, Any], now: float) -> None:
        """M64, M67: a stream is up (since ``now``: whether it stays up a healthy
        while decides the next loss's backoff); streams with an older filter close;
        the host's subscriptions learn what was agreed."""
        meta = params.get("_meta")
        stream = meta.get(_SUBSCRIPTION_ID) if isinstance(meta, Mapping) else None
        if self.listen_id is None or (stream is not None and stream != self.listen_id):
            return  # an older stream's acknowledgement: it changes nothing
        if self.acknowledged_id != self.listen_id:
            self._up_since = now
        self.acknowledged_id = self.listen_id
        self._retire()
        agreed = params.get("notifications")
        self.subscriptions.acknowledged(
            self.listen_id, agreed if isinstance(agreed, Mapping) else None
        )

    def close(self) -> None:
        """M68: closing the client closes the stream."""
        if self.listen_id is not None and self.listen_id in self._s.path.pending:
            self._s.path.dropped.append(self.listen_id)
        for stream in self._retiring:
            if stream in self._s.path.pending:
                self._s.path.dropped.append(stream)
        self._retiring = []
        self.listen_id = self.acknowledged_id = None
        self._reopen_at = self._up_since = None

    def maybe_listen(self, now: float) -> None:
        """M63: on a modern server, listen when the host wants anything it offers."""
        if self._s.modern and self.listen_id is None and self.wanted():
            self.open(now, relist=False)

    def update(self, now: float, meta: Mapping[str, Any] | None = None) -> int | None:
        """F2: what the host wants changed: a stream with the new filter, the old one
        closed once it is acknowledged. The new stream's id, or None when nothing is
        wanted any more (the stream is closed at once)."""
        if not self.wanted():
            if self.listen_id is not None:
                self._retiring.append(self.listen_id)
                self.listen_id = self.acknowledged_id = None
            self._retire()
            return None
        if self.listen_id is not None:
            self._retiring.append(self.listen_id)
            self.listen_id = None
        self._reopen_at = None
        self.open(now, relist=False, meta=meta)
        return self.listen_id

    def _retire(self) -> None:
        path = self._s.path
        for stream in self._retiring:
            pending = path.pending.get(stream)
            if pending is not None:
                path.abandon(pending, "its filter changed")  # M58: the stream closes
        self._retiring = []

    def open(self, now: float, *, relist: bool, meta: Mapping[str, Any] | None = None) -> None:
        """Open a stream with what is wanted now; ``meta``: the trace context of the
        host's subscription change that opens it (V2)."""
        up_since = self._up_since
        if up_since is not None and now - up_since >= self._s.options.backoff_max:
            self._failures = 0  # M67: a stream replaced after a healthy while (a new filter)
        wanted = self.wanted()
        params: dict[str, Any] = {"notifications": wanted}
        if meta:
            params["_meta"] = dict(meta)
        pending = self._s.path.issue(
            LISTEN,
            params,
            now,
            on_done=self._listen_ended,
            on_failed=self._listen_broke,
        )
        self.listen_id = pending.call_id
        self.acknowledged_id = self._up_since = None
        if relist and self._s.options.auto_refresh and "toolsListChanged" in wanted:
            self._s.tools.queue_refresh(-1, now)  # M67: nothing is replayed; list again

    def _listen_ended(self, pending: Pending, result: object, now: float) -> None:
        self._listen_lost(pending, None, now)

    def _listen_broke(self, pending: Pending, error: McpError, now: float) -> None:
        self._listen_lost(pending, error, now)

    def _listen_lost(self, pending: Pending, error: McpError | None, now: float) -> None:
        """M67: a graceful end stops listening; a loss opens the stream again later."""
        if pending.call_id in self._retiring:
            self._retiring.remove(pending.call_id)
            return
        if pending.call_id != self.listen_id:
            return
        up_since = self._up_since
        self.listen_id = self.acknowledged_id = self._up_since = None
        self._retire()  # the next stream carries everything wanted
        self.subscriptions.listen_lost(
            pending.call_id,
            error or RemoteProtocolError("the server ended subscriptions/listen"),
            now,
        )
        if error is None or not self._s.ready:
            return
        options = self._s.options
        if up_since is not None and now - up_since >= options.backoff_max:
            # M67: it stayed up a healthy while: this loss is a new run of trouble.
            # A stream broken soon after its acknowledgement is not: the backoff goes
            # on growing, so such a server is re-opened (and re-listed) at most about
            # once per backoff_max, not every backoff_first forever.
            self._failures = 0
        self._failures += 1
        delay = backoff_delay(
            self._failures, first=options.backoff_first, maximum=options.backoff_max
        )
        self._reopen_at = now + delay


@record(slots=True)
class _Waiting:
    """A host's change of its subscriptions at 2026-07-28, waiting for the stream
    that carries it to be acknowledged."""

    uri: str
    subscribe: bool
    stream: int | None
    deadline: float
    budget: float
    # This change added the URI to the set (a failure takes it out again).
    added: bool = False


class ResourceSubscriptions:
    """The URIs the host subscribed to, and changing them (see the module docstring)."""

    def __init__(self, session: SessionPort, listener: Listener) -> None:
        self._s = session
        self._listener = listener
        # The URIs the host subscribed to, in order (a dict as an ordered set).
        self._uris: dict[str, None] = {}
        self._waiting: dict[int, _Waiting] = {}
        # Handshake era: which session (counted) each host's subscribe went out in.
        self._session_number = 0
        self._sent_in: dict[int, int] = {}

    @property
    def uris(self) -> tuple[str, ...]:
        return tuple(self._uris)

    @property
    def call_ids(self) -> list[int]:
        return list(self._waiting)

    def next_deadline(self) -> float | None:
        return min((w.deadline for w in self._waiting.values()), default=None)

    def change(self, uri: object, subscribe: bool, now: float, budget: float) -> int:
        """F2: subscribe to ``uri`` (or stop); the host's request id. Raises at once,
        with nothing sent: ``InvalidArguments`` for a URI that is not a non-empty
        string, ``InvalidState`` before the session is ready, ``NotOffered`` when
        the server does not declare ``resources.subscribe``, ``InvalidValue`` for
        too many subscriptions."""
        s = self._s
        method = "resources/subscribe" if subscribe else "resources/unsubscribe"
        if not isinstance(uri, str) or not uri:
            raise InvalidArguments(
                "uri",
                message=f"a resource URI must be a non-empty string, not {type(uri).__name__}",
            )
        if not s.ready:
            raise InvalidState(f"cannot send {method} while the session is {s.state.value!r}")
        if not _declares(s.server_capabilities, "resources", "subscribe"):
            raise NotOffered("resources.subscribe", server=s.options.server_name)
        if subscribe and uri not in self._uris and len(self._uris) >= MAX_SUBSCRIPTIONS:
            from ..base._errors import InvalidValue

            raise InvalidValue(f"a client may subscribe to at most {MAX_SUBSCRIPTIONS} resources")
        s.begin_host_request()
        already = subscribe == (uri in self._uris)
        if not subscribe:
            # Forgotten first: a new session set up meanwhile does not subscribe again.
            self._uris.pop(uri, None)
        if s.modern:
            return self._change_stream(uri, subscribe, already, now, budget)
        _log.debug("%s %s %s", s.tag, method, excerpt(uri, 200))
        pending = s.path.issue(
            SUBSCRIBE if subscribe else UNSUBSCRIBE,
            {"uri": uri},
            now,
            on_done=self._answered,
            on_failed=s.host_failed,
            deadline=now + budget,
            budget=budget,
            hosted=True,
            context=uri,
        )
        self._sent_in[pending.call_id] = self._session_number
        return pending.call_id

    def _answered(self, pending: Pending, value: object, now: float) -> None:
        sent_in = self._sent_in.pop(pending.call_id, self._session_number)
        if pending.kind is SUBSCRIBE:
            uri = str(pending.context)
            self._uris[uri] = None
            if sent_in != self._session_number and not self._s.modern:
                # Answered for a session that has since been replaced (its answer came
                # late, on the old session's stream): the new one has to hear it too.
                self._subscribe_again(uri, now)
        # The URI as the value: a driver reads None as "ended by closing".
        self._s.events.append(RequestSucceeded(call_id=pending.call_id, value=pending.context))

    def _change_stream(
        self, uri: str, subscribe: bool, already: bool, now: float, budget: float
    ) -> int:
        """M63, F2: the listen stream again, with the new set of URIs."""
        call_id = self._s.path.new_id()
        listener = self._listener
        if already and listener.acknowledged_id is not None:
            # Already so on an acknowledged stream: nothing to change.
            self._s.events.append(RequestSucceeded(call_id=call_id, value=uri))
            return call_id
        if already and listener.listen_id is not None:
            # Already so on the stream being opened: its acknowledgement answers.
            waiting = _Waiting(uri, subscribe, listener.listen_id, now + budget, budget)
            self._waiting[call_id] = waiting
            return call_id
        if subscribe:
            self._uris[uri] = None
        stream = listener.update(now, self._s.path.traced.get(call_id))
        if stream is None:
            # Nothing is wanted any more: no stream to wait for, every change is done.
            done = [(call_id, uri)] + [(c, w.uri) for c, w in self._waiting.items()]
            self._waiting.clear()
            for finished, its_uri in done:
                self._s.events.append(RequestSucceeded(call_id=finished, value=its_uri))
            return call_id
        for earlier in self._waiting.values():  # the new stream carries their changes too
            earlier.stream = stream
        self._waiting[call_id] = _Waiting(
            uri, subscribe, stream, now + budget, budget, added=subscribe and not already
        )
        return call_id

    def acknowledged(self, stream: int, agreed: Mapping[str, Any] | None) -> None:
        """M64: the stream ``stream`` is up; ``agreed`` is the filter the server honours."""
        honoured = agreed.get("resourceSubscriptions") if agreed is not None else None
        honoured_uris = (
            {u for u in honoured if isinstance(u, str)} if isinstance(honoured, list) else set()
        )
        for call_id, waiting in list(self._waiting.items()):
            if waiting.stream != stream:
                continue
            del self._waiting[call_id]
            if waiting.subscribe and agreed is not None and waiting.uri not in honoured_uris:
                self._uris.pop(waiting.uri, None)
                error = NotOffered(
                    "resourceSubscriptions", server=self._s.options.server_name, uri=waiting.uri
                )
                self._s.events.append(CallFailed(call_id=call_id, error=error))
            else:
                self._s.events.append(RequestSucceeded(call_id=call_id, value=waiting.uri))
        if agreed is None:
            return
        for uri in [u for u in self._uris if u not in honoured_uris]:
            # M64: the server left out a URI no change of the host waits on (a stream
            # opened again after a loss): the host's wish stays, and the next stream
            # asks again; said here, as there is no request to fail.
            _log.info(
                "server %r left %r out of subscriptions/listen: no updates for it now",
                self._s.options.server_name,
                excerpt(uri, 200),
            )

    def listen_lost(self, stream: int, error: McpError, now: float) -> None:
        """The stream carrying a change ended before it was acknowledged: the change
        fails (a subscription is dropped; the next stream goes without it)."""
        for call_id, waiting in list(self._waiting.items()):
            if waiting.stream == stream:
                self._fail(call_id, error)

    def _fail(self, call_id: int, error: McpError) -> None:
        self.cancel(call_id)
        self._s.events.append(CallFailed(call_id=call_id, error=error))

    def handle_timer(self, now: float) -> None:
        for call_id, waiting in list(self._waiting.items()):
            if waiting.deadline <= now:
                method = "resources/subscribe" if waiting.subscribe else "resources/unsubscribe"
                self._fail(
                    call_id,
                    CallTimeout(
                        f"{method} was not acknowledged within its {waiting.budget:g} s budget",
                        budget=waiting.budget,
                    ),
                )

    def cancel(self, call_id: int) -> bool:
        """A change that did not happen: a URI it added leaves the set again, unless
        another subscribe to it is still waiting."""
        waiting = self._waiting.pop(call_id, None)
        if waiting is None:
            return False
        if waiting.added:
            heir = next(
                (w for w in self._waiting.values() if w.subscribe and w.uri == waiting.uri), None
            )
            if heir is None:
                self._uris.pop(waiting.uri, None)
            else:
                heir.added = True  # its own failure takes the URI out then
        return True

    def resubscribe(self, now: float) -> None:
        """F2, H6: a new handshake-era session knows nothing of the old one's
        subscriptions: subscribe to each URI again (a failure is logged; the host
        keeps the URI, and the next new session tries again)."""
        s = self._s
        self._session_number += 1
        self._sent_in = {c: n for c, n in self._sent_in.items() if c in s.path.carriers}
        if s.modern or not self._uris:
            return
        if not _declares(s.server_capabilities, "resources", "subscribe"):
            _log.info(
                "server %r no longer declares resources.subscribe: %d subscriptions lapse",
                s.options.server_name,
                len(self._uris),
            )
            return
        for uri in self._uris:
            self._subscribe_again(uri, now)

    def _subscribe_again(self, uri: str, now: float) -> None:
        self._s.path.issue(
            SUBSCRIBE,
            {"uri": uri},
            now,
            on_done=_resubscribed,
            on_failed=self._resubscribe_failed,
            deadline=now + self._s.options.call_timeout,
            context=uri,
        )

    def _resubscribe_failed(self, pending: Pending, error: McpError, now: float) -> None:
        _log.info(
            "server %r: subscribing to %r again failed: %s",
            self._s.options.server_name,
            excerpt(str(pending.context), 200),
            error,
        )

    def notified(self, method: str, params: Mapping[str, Any], now: float) -> None:
        """M64, F2, F5: a listen stream's acknowledgement; a notification about
        resources or prompts, as an event."""
        s = self._s
        if method == "notifications/subscriptions/acknowledged":
            self._listener.acknowledged(params, now)
        elif method == "notifications/resources/updated":
            uri, title = params.get("uri"), params.get("title")
            if not isinstance(uri, str):
                _log.debug("%s ignored resources/updated without a uri string", s.tag)
            elif not s.options.update_events:
                _log.debug(
                    "%s resource %r updated (no on_resource_updated)", s.tag, excerpt(uri, 200)
                )
            else:
                s.events.append(
                    ResourceUpdated(
                        server=s.options.server_name,
                        uri=uri,
                        title=title if isinstance(title, str) else None,
                    )
                )
        elif method == "notifications/resources/list_changed":
            s.cache.forget("resources/list")  # M79: list again when asked
            s.cache.forget("resources/templates/list")
            s.events.append(ResourcesListChanged())
        elif method == "notifications/prompts/list_changed":
            s.cache.forget("prompts/list")
            s.events.append(PromptsListChanged())
        else:
            _log.debug("%s ignored notification %r", s.tag, excerpt(method, 100))


def _resubscribed(pending: Pending, value: object, now: float) -> None:
    _log.debug("resources/subscribe id=%s answered (after a new session)", pending.request.id)
