"""The top of the core: what a driver holds.

This folder owns the engines that join a session to its transport and its
authorization (``_engine``), the kit the drivers' clients and hubs are built
on (``_client_base``), a call's outcome from its events (``_outcome``), and
observation of requests (``_observing``).

It imports every layer below it. Everything here is private: import public
names from ``mcpcore``.
"""
