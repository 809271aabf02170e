"""How messages travel: the layer above ``base``.

This folder owns the JSON-RPC codec (``_jsonrpc``), the request table and
pending requests (``_requests``, DESIGN F1), the 2026-07-28 envelope
(``_modern``), standard headers (``_headers``), the SSE decoder (``_sse``),
the Streamable HTTP mapping and its response readers (``_http``,
``_http_responses``), stdio framing and child control (``_stdio``), and the
outbound URL policy (``_outbound``).

It imports only ``base``. Everything here is private: import public names
from ``mcpcore``.
"""
