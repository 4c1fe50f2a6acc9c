"""Health of the services the app needs: the database and the Celery broker.

Each check answers {"ok": bool, "ms": float} and, when it fails, the class name of the error,
never its message (a connection error names hosts, users and sometimes passwords).
"""

import time
from typing import Any

from django.conf import settings
from django.db import connections

BROKER_TIMEOUT_SECONDS = 2.0


def _timed(check) -> dict[str, Any]:
    started = time.perf_counter()
    try:
        check()
    except Exception as error:  # any failure makes the service unhealthy
        result: dict[str, Any] = {"ok": False, "error": type(error).__name__}
    else:
        result = {"ok": True}
    result["ms"] = round((time.perf_counter() - started) * 1000, 1)
    return result


def health_database(alias: str = "default") -> dict[str, Any]:
    """A `SELECT 1` on the database. The caller must not be inside a transaction it needs: a
    failed query breaks the one it runs in."""

    def select_one() -> None:
        with connections[alias].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()

    return _timed(select_one)


def health_broker(
    url: str | None = None, timeout: float = BROKER_TIMEOUT_SECONDS
) -> dict[str, Any]:
    """A PING to the Redis broker, within `timeout` seconds to connect and to answer. Without a
    broker (the embedded default runs tasks in process) there is nothing to check, which is not
    a failure."""
    url = settings.CELERY_BROKER_URL if url is None else url
    if not url:
        return {"ok": True, "configured": False}

    # Imported here: the embedded default has no broker, and redis-py took a tenth of a second
    # of every start of the web server (this module is the health page's).
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    def ping() -> None:
        # No retries: redis-py's default ones would stretch a probe well past its timeout.
        client = redis.Redis.from_url(
            url, socket_connect_timeout=timeout, socket_timeout=timeout, retry=Retry(NoBackoff(), 0)
        )
        try:
            client.ping()
        finally:
            client.close()

    return _timed(ping)


def health_report() -> dict[str, Any]:
    """Every check, and "ok" only if all of them are."""
    checks = {"database": health_database(), "broker": health_broker()}
    status = "ok" if all(check["ok"] for check in checks.values()) else "error"
    return {"status": status, "checks": checks}
