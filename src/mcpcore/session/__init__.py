"""One connection's MCP session: lifecycle, handshake, and the list cache.

This folder owns the lifecycle table (``_lifecycle``), the handshake and
discovery of either era (``_handshake``), the session that composes the
features and runs the request path (``_session``), and the list cache
(``_cache``).

It imports ``features`` and the layers below. Everything here is private:
import public names from ``mcpcore``.
"""
