"""The Redis stores' client: one per store, its errors named safely (W5).

``RedisTokenStore`` and ``RedisPinStore`` share it. redis-py's client keeps a
pool of connections and is safe across threads; a dropped connection is tried
again once, at once (redis-py's own default, ten tries with growing pauses,
would hold a call for seconds). ``timeout`` bounds connecting and every answer.
Whatever redis-py raises leaves as ``StoreUnavailable`` (unreachable, refused
credentials, no answer in time) or ``StoreError``, whose message names the
store's kind and host:port, never the URL or its password; redis-py's own error
is never kept or chained.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar
from urllib.parse import urlsplit

from mcpcore import InvalidValue

from ._errors import StoreError, StoreUnavailable
from ._lease import check_timeout

try:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("the Redis stores need redis-py: pip install 'mcpcore[redis]'") from exc

__all__ = ["RedisConnection", "RedisError", "key_part"]

RedisError = redis.RedisError  # for the stores' handlers (they never import redis themselves)

_T = TypeVar("_T")
_KIND = "Redis store"


def key_part(text: str) -> str:
    """``text`` as one part of a key: a digest, so that no text can reach into another
    part (a ``:`` in a URL) and a key's length is bounded."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _where(url: str) -> tuple[str, str]:
    """(host:port or socket path, database) named by ``url``: what messages and ``repr`` show."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        parts = None
    if parts is None:  # raised here, not in the handler: the error may quote the URL
        raise InvalidValue("the Redis URL cannot be parsed")
    if parts.scheme == "unix":
        return parts.path, "0"
    return f"{host or 'localhost'}:{port or 6379}", parts.path.strip("/") or "0"


class RedisConnection:
    """A store's client of the Redis at ``url`` (see the module docstring):
    ``redis`` is the redis-py client, ``run`` calls it."""

    def __init__(self, url: str, *, timeout: float) -> None:
        self.timeout = check_timeout(timeout)
        self.where, self.database = _where(url)
        self.closed = False
        failure: str | None = None
        try:
            self.redis: redis.Redis = redis.Redis.from_url(
                url,
                socket_timeout=self.timeout,
                socket_connect_timeout=self.timeout,
                retry=Retry(NoBackoff(), 1),
                decode_responses=False,
            )
        except (ValueError, redis.RedisError):
            failure = "URL cannot be used"
        if failure is not None:  # raised here, not in the handler: the error may quote the URL
            raise InvalidValue(f"the Redis {failure}")

    def run(self, work: Callable[[], _T]) -> _T:
        """``work()``; redis-py's errors leave as the store's, naming no secret."""
        if self.closed:
            raise StoreError(f"the {_KIND} at {self.where} is closed")
        unavailable = True
        try:
            return work()
        except redis.AuthenticationError:
            failure = "refused the credentials"
        except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
            failure = (
                "did not answer in time"
                if isinstance(exc, redis.TimeoutError)
                else "cannot be reached"
            )
        except redis.ResponseError as exc:
            text = str(exc).upper()
            if text.startswith(("NOAUTH", "WRONGPASS", "NOPERM")):
                failure = "refused the credentials"
            else:
                unavailable = False
                failure = "refused the command (ResponseError)"
        except redis.RedisError as exc:
            unavailable = False
            failure = f"failed ({type(exc).__name__})"
        # Raised outside the handlers: redis-py's error is neither chained nor kept.
        message = f"the {_KIND} at {self.where} {failure}"
        raise StoreUnavailable(message) if unavailable else StoreError(message)

    def close(self) -> None:
        """Close the client's connections; ``run`` raises ``StoreError`` from now on."""
        self.closed = True
        self.redis.close()
