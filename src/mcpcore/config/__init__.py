"""What a host asks for: ``mcp.json`` and the client's options.

This folder owns reading and expanding a configuration (``_config``) and
turning a server entry and the caller's options into a client's setup
(``_setup``).

It imports ``session`` and the layers below. Everything here is private:
import public names from ``mcpcore``.
"""
