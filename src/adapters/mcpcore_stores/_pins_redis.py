"""``RedisPinStore``: pinned tool definitions (U1) in Redis, for hosts on many
machines.

One hash per (server, subject), ``mcpcore:pins:<server>:<subject>`` (each a
digest), whose fields are the tool names and whose values are the pins (JSON:
fingerprint and definition). Each method is one command (``HGETALL``, ``HSET``,
``HDEL``), which Redis runs whole, one at a time: any number of workers may pin
at once and no pin is lost (two pinning one tool: the later one wins, as a pin
is only ever replaced by a definition its host accepted). The client and its
errors are ``_redis_connection``'s: a store that cannot be reached raises
``StoreUnavailable`` naming its host:port, never the URL or its password (W5); a
value mcpcore did not write raises ``StoreCorrupt``. Each call is blocking: an
async driver runs it on a worker thread.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mcpcore import Pin

from ._errors import StoreCorrupt
from ._redis_connection import RedisConnection, key_part

__all__ = ["RedisPinStore"]

_PREFIX = "mcpcore:pins:"


def _encode(pin: Pin) -> str:
    return json.dumps({"fingerprint": pin.fingerprint, "definition": pin.definition})


def _decode(value: bytes) -> Pin:
    try:
        fields = json.loads(value)
    except ValueError:
        raise StoreCorrupt("pin") from None
    if not isinstance(fields, dict):
        raise StoreCorrupt("pin")
    fingerprint, definition = fields.get("fingerprint"), fields.get("definition")
    if not isinstance(fingerprint, str):
        raise StoreCorrupt("fingerprint")
    if not isinstance(definition, str):
        raise StoreCorrupt("definition")
    return Pin(fingerprint, definition)


def _field(name: str) -> bytes:
    # surrogatepass: any Python string is a field, and reads back as itself
    return name.encode("utf-8", "surrogatepass")


def _name(field: bytes) -> str:
    try:
        return field.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        raise StoreCorrupt("name") from None


class RedisPinStore:
    """A ``PinStore`` on Redis (see the module docstring).

    ``url``: a ``redis://``, ``rediss://`` or ``unix://`` URL (it may hold a
    password: it is never shown). ``timeout``: how long connecting, and each
    answer, may take before ``StoreUnavailable``.
    """

    def __init__(self, url: str, *, timeout: float = 5.0) -> None:
        self._db = RedisConnection(url, timeout=timeout)
        self._redis = self._db.redis

    def __repr__(self) -> str:
        return f"RedisPinStore({self._db.where}/{self._db.database})"

    def __enter__(self) -> RedisPinStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store's connections."""
        if not self._db.closed:
            self._db.close()

    @staticmethod
    def _key(server: str, subject: str) -> str:
        return f"{_PREFIX}{key_part(server)}:{key_part(subject)}"

    def get_pins(self, server: str, subject: str) -> Mapping[str, Pin]:
        key = self._key(server, subject)
        fields: dict[bytes, bytes] = self._db.run(
            lambda: self._redis.hgetall(key)  # type: ignore[arg-type,return-value]
        )
        return {_name(name): _decode(value) for name, value in fields.items()}

    def put_pin(self, server: str, subject: str, name: str, pin: Pin) -> None:
        key = self._key(server, subject)
        self._db.run(lambda: self._redis.hset(key, _field(name), _encode(pin)))

    def delete_pin(self, server: str, subject: str, name: str) -> None:
        key = self._key(server, subject)
        self._db.run(lambda: self._redis.hdel(key, _field(name)))
