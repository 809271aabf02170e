"""The stores' errors: what a host catches when a shared store cannot serve (W5).

``StoreError`` is the base. ``StoreUnavailable``: the store cannot be reached,
or it refused the credentials; its message names the store's kind and where it
is (a host and port, a path), never a password or a whole DSN or URL.
``StoreCorrupt``: a row the store holds is not one mcpcore wrote; its message
names the field, never the row's content (a token).
"""

from __future__ import annotations

__all__ = ["StoreCorrupt", "StoreError", "StoreUnavailable"]


class StoreError(Exception):
    """A shared store could not do what was asked (the message names no secret)."""


class StoreUnavailable(StoreError):
    """The store is unreachable, or refused the credentials (W5)."""


class StoreCorrupt(StoreError):
    """A stored record is not one mcpcore wrote (the message names the field only)."""
