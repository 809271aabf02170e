"""What both drivers add to httpcore: the pool's request assignment (a connection
is asked whether the server has closed it only when about to be used), and the
size below which their streams hold a request's writes until its response is read.

Loaded with httpcore, on a client's first remote start (B5). Nothing here is
about MCP; it is how requests are put on connections.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpcore

# Writes smaller than this are held until the response is read, so a request's
# head and body (two writes from httpcore) leave in one send.
COALESCE_LIMIT = 64 * 1024

# The httpcore whose private pool procedure ``LazyAssignment`` replaces; with any
# other the drivers use httpcore's pool unchanged (slower, the same outcome).
REPLACES_HTTPCORE_POOL = httpcore.__version__.startswith("1.0.")


class LazyAssignment:
    """httpcore 1.0's ``_assign_requests_to_connections``, with three changes.

    httpcore runs it whenever a request comes or goes.

    - It asks every connection ``has_expired()``, which for an idle HTTP/1.1
      connection polls its socket (a system call, and with threads a
      hand-over of the GIL). Here a connection is asked only when a queued
      request is about to be put on it: an expired one is closed then and the
      search goes on, so no request goes to a connection the server has
      closed, as before. An expired connection that no request reaches waits
      (idle, within the pool's bound) until one does or the pool closes.
    - On HTTP/1.1 it puts a request on a connection already given to another
      request whose task has not started on it yet (it still reads as idle),
      so with many callers most requests met ``ConnectionNotAvailable`` and
      went round again: with 32 calls in flight, two wasted rounds per call.
      Here such a connection is passed over.
    - It builds a list of all connections inside its loop over them, only to
      count them; here the count is taken directly.

    Otherwise every decision is httpcore's: a property test runs both on the
    same pool states. Mixed in before ``httpcore.ConnectionPool`` or
    ``httpcore.AsyncConnectionPool``: the procedure does no I/O, so it is the
    same for both.
    """

    _connections: list[Any]
    _requests: list[Any]
    _max_connections: int
    _max_keepalive_connections: int
    _http2: bool

    if TYPE_CHECKING:  # provided by the pool this is mixed into

        def create_connection(self, origin: Any) -> Any: ...

    def _assign_requests_to_connections(self) -> list[Any]:
        connections = self._connections
        closing = []
        for connection in list(connections):
            if connection.is_closed():
                connections.remove(connection)
            elif (
                connection.is_idle()
                # httpcore compares the number of connections (not of idle ones)
                and len(connections) > self._max_keepalive_connections
            ):
                connections.remove(connection)
                closing.append(connection)
        # On HTTP/1.1 a connection carries one request at a time, and one just given a
        # request still reads as available until that request's task starts on it:
        # such connections are passed over (on HTTP/2 a connection takes more).
        taken = set() if self._http2 else {id(r.connection) for r in self._requests}
        for pool_request in [r for r in self._requests if r.is_queued()]:
            origin = pool_request.request.url.origin
            chosen = None
            for connection in list(connections):
                if (
                    id(connection) in taken
                    or not connection.can_handle_request(origin)
                    or not connection.is_available()
                ):
                    continue
                if not connection.has_expired():
                    chosen = connection
                    break
                connections.remove(connection)
                closing.append(connection)
            if chosen is None:
                if len(connections) >= self._max_connections:
                    # full: make room by closing an idle connection, if there is one
                    idle = next(
                        (c for c in connections if c.is_idle() and id(c) not in taken), None
                    )
                    if idle is None:
                        continue
                    connections.remove(idle)
                    closing.append(idle)
                chosen = self.create_connection(origin)
                connections.append(chosen)
            pool_request.assign_to_connection(chosen)
            if not self._http2:
                taken.add(id(chosen))
        return closing
