"""``RedisTokenStore``: sign-ins, tasks and paused calls in Redis (W2-W5).

For hosts on many machines: every worker opens the store on one Redis
(``RedisTokenStore(url)``; the extra ``redis`` installs redis-py). Every key
starts ``mcpcore:``; what a key names (a subject, a server URL, a task or
continuation id, a lock) is hashed into it (SHA-256), so no value can reach
into another's key however it is spelled::

    mcpcore:tokens:<subject>:<server>      a hash: per issuer the set (b:ISSUER), its
                                           fingerprint (f:ISSUER) and the write's
                                           sequence number (s:ISSUER); "seq" counts
    mcpcore:lease:<lock>                   the holder's token, with an expiry (PX)
    mcpcore:clients                        a hash: issuer -> the registered client
    mcpcore:task:<subject>:<task id>       a task handle's JSON
    mcpcore:continuation:<subject>:<id>    a continuation's JSON

Compare-and-set (W2) is one Lua script, so Redis runs it whole with nothing
in between: it finds the newest set held for the (subject, server) (the
highest sequence number), compares its fingerprint (a digest of the access
and refresh token, what ``mcpcore.same_tokens`` compares) with the one the
caller read, and writes or deletes only when they agree.

The refresh lock is a lease (W3): ``SET key token NX PX lease``, with a random
token this instance keeps; Redis ends it after ``lease`` on its own clock, so a
holder that was killed or hung delays the others by at most that. Giving it
back is a script that deletes the key only while it still holds this holder's
token: a holder that outlived its lease never frees the next holder's. The
sign-in lock is the same lease under another name.

Taking a continuation is ``GETDEL`` (Redis 6.2): one command, one taker (W4).

The client (redis-py's, a pool safe across threads, a dropped connection tried
again once, ``timeout`` bounding connecting and every answer) and its errors
are ``_redis_connection``'s, shared with ``RedisPinStore``: whatever redis-py
raises leaves as ``StoreUnavailable`` (unreachable, refused credentials, no
answer in time) or ``StoreError``, whose message names the store's kind and
host:port, never the URL or its password (W5); redis-py's own error is never
kept or chained.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

from mcpcore import (
    DEFAULT_SUBJECT,
    ClientRecord,
    Continuation,
    TaskHandle,
    TokenKey,
    TokenSet,
)

from ._errors import StoreCorrupt
from ._lease import LeaseLocks, check_lease, holder_token
from ._records import (
    decode_client,
    decode_continuation,
    decode_task,
    decode_tokens,
    encode_client,
    encode_tokens,
)
from ._redis_connection import RedisConnection, RedisError, key_part

__all__ = ["RedisTokenStore"]

_T = TypeVar("_T")
_PREFIX = "mcpcore:"

# The newest set's issuer in a tokens hash (the highest s:ISSUER), shared by the scripts.
_NEWEST = """
local function newest()
  local all = redis.call('HGETALL', KEYS[1])
  local best, best_seq = nil, -1
  for i = 1, #all, 2 do
    if string.sub(all[i], 1, 2) == 's:' then
      local seq = tonumber(all[i + 1])
      if seq > best_seq then best, best_seq = string.sub(all[i], 3), seq end
    end
  end
  return best
end
local function fits()
  if ARGV[1] ~= '1' then return true end
  local issuer = newest()
  return issuer ~= nil and redis.call('HGET', KEYS[1], 'f:' .. issuer) == ARGV[2]
end
"""

# KEYS[1] the tokens hash; ARGV: guarded ('1'/'0'), fingerprint read, issuer, set, fingerprint.
_SET = (
    _NEWEST
    + """
if not fits() then return 0 end
local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
redis.call('HSET', KEYS[1], 'b:' .. ARGV[3], ARGV[4], 'f:' .. ARGV[3], ARGV[5], 's:' .. ARGV[3], seq)
return 1
"""
)

# KEYS[1] the tokens hash; ARGV: guarded ('1'/'0'), fingerprint read, issuer.
_DELETE = (
    _NEWEST
    + """
if not fits() then return 0 end
redis.call('HDEL', KEYS[1], 'b:' .. ARGV[3], 'f:' .. ARGV[3], 's:' .. ARGV[3])
return 1
"""
)

# KEYS[1] the lease; ARGV[1] the holder's token.
_GIVE_LEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _fingerprint(tokens: TokenSet) -> str:
    """What ``same_tokens`` compares (the access and refresh token), as a digest."""
    pair = json.dumps([tokens.access_token, tokens.refresh_token], separators=(",", ":"))
    return hashlib.sha256(pair.encode("utf-8")).hexdigest()


class RedisTokenStore(LeaseLocks):
    """A ``mcpcore.SharedTokenStore`` on Redis (see the module docstring).

    ``url``: a ``redis://``, ``rediss://`` or ``unix://`` URL (it may hold a
    password: it is never shown). ``lease``: how long a refresh or sign-in lock
    lasts, in seconds (W3). ``timeout``: how long connecting, and each answer,
    may take before ``StoreUnavailable``.
    """

    def __init__(self, url: str, *, lease: float = 30.0, timeout: float = 5.0) -> None:
        self._lease = check_lease(lease)
        self._db = RedisConnection(url, timeout=timeout)
        self._redis = self._db.redis
        self._set = self._redis.register_script(_SET)
        self._delete = self._redis.register_script(_DELETE)
        self._give_lease = self._redis.register_script(_GIVE_LEASE)
        self._lock = threading.Lock()  # guards _holders
        self._holders: dict[str, str] = {}  # lease key -> the holder token this store wrote

    def __repr__(self) -> str:
        return f"RedisTokenStore({self._db.where}/{self._db.database})"

    def __enter__(self) -> RedisTokenStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self, work: Callable[[], _T]) -> _T:
        """``work()``; redis-py's errors leave as the store's, naming no secret."""
        return self._db.run(work)

    def close(self) -> None:
        """Give back the leases this store holds (when Redis answers) and close its connections."""
        with self._lock:
            if self._db.closed:
                return
            held = list(self._holders.items())
            self._holders.clear()
        for key, holder in held:
            try:
                self._give_lease(keys=[key], args=[holder])
            except RedisError:
                break  # they end by themselves within the lease
        self._db.close()

    # --- keys ---------------------------------------------------------------------------

    @staticmethod
    def _tokens_key(subject: str, server_url: str) -> str:
        return f"{_PREFIX}tokens:{key_part(subject)}:{key_part(server_url)}"

    @staticmethod
    def _lease_key(name: str) -> str:
        return f"{_PREFIX}lease:{key_part(name)}"

    @staticmethod
    def _task_key(subject: str, task_id: str) -> str:
        return f"{_PREFIX}task:{key_part(subject)}:{key_part(task_id)}"

    @staticmethod
    def _continuation_key(subject: str, continuation_id: str) -> str:
        return f"{_PREFIX}continuation:{key_part(subject)}:{key_part(continuation_id)}"

    # --- tokens -------------------------------------------------------------------------

    def get_tokens(self, server_url: str, *, subject: str = DEFAULT_SUBJECT) -> TokenSet | None:
        """The newest token set held for (``server_url``, ``subject``), whatever its issuer."""
        fields: dict[bytes, bytes] = self._run(
            lambda: self._redis.hgetall(self._tokens_key(subject, server_url))  # type: ignore[arg-type,return-value]
        )
        newest: tuple[int, bytes] | None = None
        for name, value in fields.items():
            if name.startswith(b"s:"):
                try:
                    seq = int(value)
                except ValueError:
                    raise StoreCorrupt("sequence number") from None
                if newest is None or seq > newest[0]:
                    newest = (seq, name[2:])
        if newest is None:
            return None
        body = fields.get(b"b:" + newest[1])
        if body is None:
            raise StoreCorrupt("tokens")
        return decode_tokens(body.decode("utf-8", "replace"))

    def set_tokens(
        self, key: TokenKey, tokens: TokenSet, *, replaces: TokenSet | None = None
    ) -> bool:
        """Store ``tokens`` under ``key``; with ``replaces``, only if the newest set held
        for (``key.server_url``, ``key.subject``) is still that one. True if written."""
        args = [
            "0" if replaces is None else "1",
            "" if replaces is None else _fingerprint(replaces),
            key.issuer,
            encode_tokens(tokens),
            _fingerprint(tokens),
        ]
        keys = [self._tokens_key(key.subject, key.server_url)]
        return bool(self._run(lambda: self._set(keys=keys, args=args)))

    def delete_tokens(self, key: TokenKey, *, only_if: TokenSet | None = None) -> bool:
        """Forget the tokens under ``key``; with ``only_if``, only if the newest set held
        for (``key.server_url``, ``key.subject``) is still that one. True if they were
        removed (or were not there)."""
        args = [
            "0" if only_if is None else "1",
            "" if only_if is None else _fingerprint(only_if),
            key.issuer,
        ]
        keys = [self._tokens_key(key.subject, key.server_url)]
        return bool(self._run(lambda: self._delete(keys=keys, args=args)))

    # --- leases -------------------------------------------------------------------------

    def _take(self, name: str) -> bool:
        key, holder = self._lease_key(name), holder_token()
        millis = max(1, round(self._lease * 1000))
        taken = self._run(lambda: self._redis.set(key, holder, nx=True, px=millis))
        if not taken:
            return False
        with self._lock:
            self._holders[key] = holder
        return True

    def _give(self, name: str) -> None:
        key = self._lease_key(name)
        with self._lock:
            holder = self._holders.pop(key, None)
        if holder is not None:
            self._run(lambda: self._give_lease(keys=[key], args=[holder]))

    # --- clients ------------------------------------------------------------------------

    def get_clients(self) -> Sequence[ClientRecord]:
        fields: dict[bytes, bytes] = self._run(
            lambda: self._redis.hgetall(f"{_PREFIX}clients")  # type: ignore[arg-type,return-value]
        )
        return [decode_client(fields[k].decode("utf-8", "replace")) for k in sorted(fields)]

    def set_client(self, issuer: str, client: ClientRecord) -> None:
        self._run(lambda: self._redis.hset(f"{_PREFIX}clients", issuer, encode_client(client)))

    def delete_client(self, issuer: str) -> None:
        self._run(lambda: self._redis.hdel(f"{_PREFIX}clients", issuer))

    # --- tasks and paused calls (W4) ----------------------------------------------------

    def save_task(self, handle: TaskHandle, *, subject: str = DEFAULT_SUBJECT) -> None:
        key = self._task_key(subject, handle.task_id)
        self._run(lambda: self._redis.set(key, handle.to_json()))

    def load_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> TaskHandle | None:
        text = self._run(lambda: self._redis.get(self._task_key(subject, task_id)))
        return None if text is None else decode_task(text)

    def delete_task(self, task_id: str, *, subject: str = DEFAULT_SUBJECT) -> bool:
        return bool(self._run(lambda: self._redis.delete(self._task_key(subject, task_id))))

    def save_continuation(
        self, continuation: Continuation, *, subject: str = DEFAULT_SUBJECT
    ) -> str:
        """Keep ``continuation`` for ``subject``; returns its id (what ``take_continuation`` takes)."""
        ident = continuation.id
        key = self._continuation_key(subject, ident)
        self._run(lambda: self._redis.set(key, continuation.to_json()))
        return ident

    def take_continuation(
        self, continuation_id: str, *, subject: str = DEFAULT_SUBJECT
    ) -> Continuation | None:
        """Remove and return the continuation: however many workers ask at once, one gets it."""
        key = self._continuation_key(subject, continuation_id)
        text = self._run(lambda: self._redis.getdel(key))
        return None if text is None else decode_continuation(text)
