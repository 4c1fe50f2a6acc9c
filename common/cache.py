"""Django's Redis cache, made tolerant of a Redis that cannot be reached.

What the production settings keep in the cache can all be done without it: sessions are
`cached_db` (a miss reads the database), the throttles' counts start again (a request goes
through), rendered panels are rendered again. So while Redis is down a read is a miss and a
write is skipped, with one warning a process, instead of every request being a 500 (Django's
backend raises redis' ConnectionError out of any cache call).

A write skipped during the outage would leave Redis holding the value from before, which it
serves again once it answers: a session signed out during the outage would be signed in again.
So the keys whose write or delete was skipped are deleted first thing when Redis answers again.

After a failure the cache is not asked again for `retry_seconds` (an option, RETRY_SECONDS by
default): a Redis host that drops packets would otherwise cost every cache call its timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

logger = logging.getLogger(__name__)

# Seconds to connect and to answer: a cache call is on every request's path.
SOCKET_TIMEOUT_SECONDS = 1.0
RETRY_SECONDS = 5.0
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
# Keys of skipped writes remembered for deletion; beyond this, the outage is logged as having
# possibly left stale entries (sessions still expire with their age).
MAX_PENDING_KEYS = 10_000

Result = TypeVar("Result")


class _Outage:
    """What one process knows about the Redis at one location, shared by its threads (Django
    gives each thread a backend object of its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.down = False
        self.down_until = 0.0
        self.stale: set[str] = set()
        self.overflow = False

    def skip(self) -> bool:
        return time.monotonic() < self.down_until

    def remember(self, keys: Iterable[str]) -> None:
        """Keys whose write did not reach Redis: what it holds for them may be stale."""
        with self.lock:
            for key in keys:
                if len(self.stale) >= MAX_PENDING_KEYS:
                    self.overflow = True
                    break
                self.stale.add(key)

    def failed(self, error: Exception, retry_seconds: float) -> None:
        with self.lock:
            self.down_until = time.monotonic() + retry_seconds
            if self.down:
                return
            self.down = True
        # A connection error names host and port, never the password of the URL.
        logger.warning(
            "cache unavailable (%s: %s): reads are misses and writes are skipped until it "
            "answers; sessions are read from the database and throttles let requests through",
            type(error).__name__,
            str(error).strip().splitlines()[0] if str(error).strip() else "",
        )

    def take_stale(self) -> tuple[list[str], bool]:
        if not self.stale and not self.overflow:  # every call asks: no lock for the usual answer
            return [], False
        with self.lock:
            keys, overflow = list(self.stale), self.overflow
            self.stale.clear()
            self.overflow = False
        return keys, overflow

    def answered(self) -> None:
        with self.lock:
            if not self.down:
                return
            self.down = False
            self.down_until = 0.0
        logger.info("cache available again")


_outages: dict[tuple[str, ...], _Outage] = {}
_outages_lock = threading.Lock()


def _outage_for(servers: list[str]) -> _Outage:
    with _outages_lock:
        return _outages.setdefault(tuple(servers), _Outage())


class TolerantRedisCache(RedisCache):
    """RedisCache whose calls answer as for a missing key while Redis cannot be reached."""

    def __init__(self, server: str | list[str], params: dict[str, Any]) -> None:
        options = dict(params.get("OPTIONS", {}))
        self._retry_seconds = float(options.pop("retry_seconds", RETRY_SECONDS))
        options = {
            "socket_connect_timeout": SOCKET_TIMEOUT_SECONDS,
            "socket_timeout": SOCKET_TIMEOUT_SECONDS,
            # redis-py retries a failed connection with backoff by default: the outage would
            # then cost every call more than its timeout.
            "retry": Retry(NoBackoff(), 0),
            **options,
        }
        super().__init__(server, {**params, "OPTIONS": options})
        self._outage = _outage_for(self._servers)

    def _tolerant(
        self,
        call: Callable[[], Result],
        miss: Result,
        writes: Iterable[str] = (),
        version: int | None = None,
    ) -> Result:
        """`call()`, or `miss` while Redis cannot be reached. `writes`: the keys `call` writes
        or deletes, deleted once Redis answers again if the call could not reach it."""
        if self._outage.skip():
            self._outage.remember(self._keys(writes, version))
            return miss
        try:
            self._delete_stale()
            result = call()
        except UNREACHABLE as error:
            self._outage.remember(self._keys(writes, version))
            self._outage.failed(error, self._retry_seconds)
            return miss
        self._outage.answered()
        return result

    def _keys(self, keys: Iterable[str], version: int | None) -> list[str]:
        return [self.make_and_validate_key(key, version=version) for key in keys]

    def _delete_stale(self) -> None:
        keys, overflow = self._outage.take_stale()
        if not keys and not overflow:
            return
        try:
            for start in range(0, len(keys), 500):
                self._cache.delete_many(keys[start : start + 500])
        except UNREACHABLE:
            self._outage.remember(keys)
            raise
        logger.info(
            "cache: %s entries written during the outage deleted%s",
            len(keys),
            "; more were skipped than remembered, so some may be stale until they expire"
            if overflow
            else "",
        )

    # Each call goes through `_tolerant` with what a missing key would give; `parent` is bound
    # outside the lambda, where super() without arguments would not work.
    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        parent = super()
        return self._tolerant(
            lambda: parent.add(key, value, timeout, version), False, [key], version
        )

    def get(self, key, default=None, version=None) -> Any:
        parent = super()
        return self._tolerant(lambda: parent.get(key, default, version), default)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None) -> None:
        parent = super()
        self._tolerant(lambda: parent.set(key, value, timeout, version), None, [key], version)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None) -> bool:
        parent = super()
        return self._tolerant(lambda: parent.touch(key, timeout, version), False)

    def delete(self, key, version=None) -> bool:
        parent = super()
        return self._tolerant(lambda: parent.delete(key, version), False, [key], version)

    def get_many(self, keys, version=None) -> dict[str, Any]:
        parent = super()
        return self._tolerant(lambda: parent.get_many(keys, version), {})

    def has_key(self, key, version=None) -> bool:
        parent = super()
        return self._tolerant(lambda: parent.has_key(key, version), False)

    def incr(self, key, delta=1, version=None) -> int:
        parent = super()
        missing = object()
        result = self._tolerant(lambda: parent.incr(key, delta, version), missing)
        if result is missing:
            # What every backend raises for a key it does not hold.
            raise ValueError(f"Key '{key}' not found.")
        return result  # type: ignore[return-value]

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None) -> list[str]:
        parent = super()
        return self._tolerant(
            lambda: parent.set_many(data, timeout, version), list(data), list(data), version
        )

    def delete_many(self, keys, version=None) -> None:
        parent = super()
        keys = list(keys)
        self._tolerant(lambda: parent.delete_many(keys, version), None, keys, version)

    def clear(self) -> bool:
        parent = super()
        return self._tolerant(lambda: parent.clear(), False)
