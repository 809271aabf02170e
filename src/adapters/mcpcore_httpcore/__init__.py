"""What both drivers add to httpcore's connection pool: request assignment that
asks a connection whether the server has closed it only when about to use it.

Loaded with httpcore, on a client's first remote start (B5). Nothing here is
about MCP; it is how requests are put on connections.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import httpcore

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
        # request still reads as available until that request's task starts on it.
        one_each = not self._http2
        taken = {id(r.connection) for r in self._requests} if one_each else set()

        def book(pool_request: Any, connection: Any) -> None:
            pool_request.assign_to_connection(connection)
            if one_each:
                taken.add(id(connection))

        for pool_request in [r for r in self._requests if r.is_queued()]:
            origin = pool_request.request.url.origin
            available = None
            for connection in list(connections):
                if (
                    id(connection) not in taken
                    and connection.can_handle_request(origin)
                    and connection.is_available()
                ):
                    if not connection.has_expired():
                        available = connection
                        break
                    connections.remove(connection)
                    closing.append(connection)
            if available is not None:
                book(pool_request, available)
            elif len(connections) < self._max_connections:
                connection = self.create_connection(origin)
                connections.append(connection)
                book(pool_request, connection)
            else:
                idle = next((c for c in connections if c.is_idle() and id(c) not in taken), None)
                if idle is not None:
                    connections.remove(idle)
                    closing.append(idle)
                    connection = self.create_connection(origin)
                    connections.append(connection)
                    book(pool_request, connection)
        return closing
