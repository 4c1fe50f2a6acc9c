"""A real Celery worker for the tests that need one: a `celery worker` subprocess on a queue of
the test's own, against the test database on PostgreSQL (another process cannot see SQLite's
test database) and the Redis of REDIS_URL. Tests start, kill and restart it as a fault needs;
Celery's docs warn that eager mode only emulates a worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import pytest

ROOT = Path(__file__).resolve().parents[1]


def redis_reachable(url: str) -> bool:
    """Whether a Redis answers at `url` (the app's own broker check; no URL is no Redis)."""
    from common.health import health_broker

    return bool(url) and health_broker(url, timeout=1)["ok"]


def worker_database_url() -> str:
    """The URL of the test database this process uses, for the worker."""
    from django.db import connection

    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{db['NAME']}"


def queue_purge(queue: str) -> None:
    from config.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_purge(queue)


def queue_forget(queue: str, redis_url: str) -> None:
    """Leave nothing of a test's queue in Redis: its messages, its bindings, and the
    unacknowledged message a killed worker leaves in kombu's `unacked` hash (which kombu would
    put back into the queue hours later)."""
    import redis

    queue_purge(queue)
    client = redis.Redis.from_url(redis_url)
    client.delete(f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
    for tag, value in client.hscan_iter("unacked"):
        if json.loads(value)[-1] == queue:  # [message, exchange, routing key]
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


class CeleryWorker:
    """A `celery worker` subprocess on one queue (threads, without gossip or mingle), started
    and killed as often as a test needs; each start logs to a file of its own. `env` is added to
    this process's environment (the test settings, a database and broker URL, the app's own
    settings such as a queue name or a lease)."""

    def __init__(self, queue: str, env: dict[str, str], log_folder: Path, concurrency: int = 1):
        self.queue = queue
        self.env = env
        self.log_folder = log_folder
        self.concurrency = concurrency
        self.process: subprocess.Popen | None = None
        self.started = 0

    def start(self, *extra: str) -> None:
        self.started += 1
        log = (self.log_folder / f"worker-{self.started}.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", self.queue,
             "--loglevel=WARNING", "--pool=threads", f"--concurrency={self.concurrency}",
             "-n", f"{self.queue}-{self.started}@%h",
             "--without-heartbeat", "--without-gossip", "--without-mingle", *extra],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", **self.env},
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()

    def kill(self) -> None:
        """SIGKILL, as an OOM kill or a lost machine does: no warm shutdown (SIGTERM would let
        the running task finish), no message given back."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """The test is over: a cold shutdown (SIGQUIT) does not wait for a task to finish."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(
            path.read_text(errors="replace")[-3000:]
            for path in sorted(self.log_folder.glob("worker-*.log"))
        )


def wait_for(
    condition: Callable[[], object], what: str, worker: CeleryWorker, timeout: float = 60
) -> None:
    """Poll until `condition()` holds; a timeout fails the test with the worker's output."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}; worker output:\n{worker.logs()}")
