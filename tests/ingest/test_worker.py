"""The sync in a real Celery worker (a subprocess) on the real Redis broker, against the
stand-in GitHub, with the test database on PostgreSQL (another process cannot see SQLite's
in-memory test database). Not eager mode: Celery's docs warn that it only emulates a worker.

Each test session uses a queue of its own, purged around every test, so that messages left by
earlier runs never reach these workers. Results are awaited by polling the SyncRun row with a
deadline. Needs PostgreSQL and Redis: skipped without them, failed in CI.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection
from django.utils import timezone

from corpus.models import Issue
from ingest.dispatch import sync_request
from ingest.models import Source, SyncRun
from ingest.sources import source_create
from ingest.tasks import sync_due_sources, sync_source
from tests.conftest import require_postgres, require_service
from tests.ingest.conftest import SAMPLE_REPOSITORIES

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
QUEUE = f"ingest-tests-{uuid.uuid4().hex[:10]}"
LEASE_SECONDS = 3
DEADLINE_SECONDS = 60
WORKER_COMMAND = [
    sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", QUEUE, "--loglevel=WARNING",
    # Two threads: a second message for the same run can arrive while one runs.
    "--pool=threads", "--concurrency=2",
    "--without-heartbeat", "--without-gossip", "--without-mingle",
]  # fmt: skip
FINISHED = (SyncRun.Status.DONE, SyncRun.Status.FAILED)


def redis_reachable(url: str) -> bool:
    if not url:
        return False
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def purge_queue() -> None:
    from config.celery import app

    with app.connection_for_write() as broker:
        broker.default_channel.queue_purge(QUEUE)


def forget_queue() -> None:
    """Leave nothing of the session's queue in Redis: its messages, its bindings, and the
    unacknowledged message a killed worker leaves in kombu's `unacked` hash (which kombu would
    put back into the queue hours later)."""
    import redis

    purge_queue()
    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(f"_kombu.binding.{QUEUE}", f"_kombu.binding_permanent.{QUEUE}")
    for tag, value in client.hscan_iter("unacked"):
        if json.loads(value)[-1] == QUEUE:  # [message, exchange, routing key]
            client.hdel("unacked", tag)
            client.zrem("unacked_index", tag)


def worker_database_url() -> str:
    """The URL of the test database this process uses, for the worker."""
    db = connection.settings_dict
    credentials = quote(db["USER"] or "", safe="")
    if db["PASSWORD"]:
        credentials += ":" + quote(db["PASSWORD"], safe="")
    host = db["HOST"] or "127.0.0.1"
    port = f":{db['PORT']}" if db["PORT"] else ""
    return f"postgres://{credentials}@{host}{port}/{db['NAME']}"


class Worker:
    """A `celery worker` subprocess consuming the session's queue."""

    def __init__(self, github_url: str, log_folder: Path) -> None:
        self.github_url = github_url
        self.log_folder = log_folder
        self.process: subprocess.Popen | None = None
        self.started = 0

    def start(self) -> None:
        self.started += 1
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "GITHUB_API_URL": self.github_url,
            "GITHUB_TOKEN": "",
            "INGEST_QUEUE": QUEUE,
            "INGEST_LEASE_SECONDS": str(LEASE_SECONDS),
            "INGEST_PER_PAGE": "5",
            "INGEST_RETRY_BACKOFF_SECONDS": "1",
            "INGEST_RETRY_BACKOFF_MAX_SECONDS": "2",
            "LOG_LEVEL": "WARNING",
        }
        log = (self.log_folder / f"worker-{self.started}.log").open("wb")
        self.process = subprocess.Popen(
            [*WORKER_COMMAND, "-n", f"{QUEUE}-{self.started}@%h"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()

    def kill(self) -> None:
        """SIGKILL, not SIGTERM: on SIGTERM Celery shuts down warm and lets the running task
        finish, which is not a crash. SIGKILL is what an OOM kill or a lost machine does."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        # The test is over: a cold shutdown (SIGQUIT) does not wait for a task to finish.
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(
            path.read_text(errors="replace")[-4000:]
            for path in sorted(self.log_folder.glob("worker-*.log"))
        )


@pytest.fixture
def worker(transactional_db, github, settings, tmp_path) -> Iterator[Worker]:
    require_postgres()
    require_service(
        redis_reachable(settings.REDIS_URL),
        "Redis",
        "start it with `redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' "
        "--appendonly no` and set REDIS_URL=redis://127.0.0.1:6379/0",
    )
    settings.INGEST_QUEUE = QUEUE
    settings.INGEST_LEASE_SECONDS = LEASE_SECONDS
    purge_queue()
    assert github.base_url is not None
    celery_worker = Worker(github.base_url, tmp_path)
    celery_worker.start()
    yield celery_worker
    celery_worker.stop()
    forget_queue()


def wait_for(
    condition: Callable[[], bool], what: str, worker: Worker, timeout: float = DEADLINE_SECONDS
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}; worker output:\n{worker.logs()}")


def finished_run(run_id: int, worker: Worker) -> SyncRun:
    wait_for(lambda: SyncRun.objects.get(pk=run_id).status in FINISHED, f"run {run_id}", worker)
    run = SyncRun.objects.get(pk=run_id)
    assert run.status == SyncRun.Status.DONE, f"{run.error}\n{worker.logs()}"
    return run


@pytest.fixture
def sample_sources(sample_github) -> list[Source]:
    return [source_create(repository=full_name) for full_name in SAMPLE_REPOSITORIES]


def test_a_worker_stores_every_issue_and_a_second_sync_changes_nothing(
    worker, sample_github, sample_sources, corpus
):
    runs = [sync_request(source=source) for source in sample_sources]
    for run in runs:
        finished_run(run.pk, worker)
    for full_name in SAMPLE_REPOSITORIES:
        corpus.assert_same(sample_github, full_name)
    sample_github.reset_log()

    again = [finished_run(sync_request(source=source).pk, worker) for source in sample_sources]

    assert all(run.requests_used <= 2 for run in again)
    assert sample_github.request_count <= 2 * len(sample_sources)
    assert all(run.counts.get("created", 0) == run.counts.get("updated", 0) == 0 for run in again)
    for full_name in SAMPLE_REPOSITORIES:
        corpus.assert_same(sample_github, full_name)


def test_a_rate_limit_makes_the_run_wait_and_finish_after_the_reset(
    worker, sample_github, sample_sources, corpus
):
    sample_github.rate_limit_after = 20  # of about 30 requests
    sample_github.rate_limit_reset_seconds = 0.5
    run = sync_request(source=sample_sources[0])
    statuses: set[str] = set()

    def done() -> bool:
        status = SyncRun.objects.get(pk=run.pk).status
        statuses.add(status)
        return status in FINISHED

    wait_for(done, "the rate-limited run", worker)

    finished = finished_run(run.pk, worker)
    assert SyncRun.Status.WAITING in statuses
    assert finished.attempts >= 2 and finished.rate_limit_reset is not None
    sample_github.rate_limit_after = None
    corpus.assert_same(sample_github, SAMPLE_REPOSITORIES[0])


def test_a_server_error_every_fifth_request_gives_the_same_corpus(
    worker, sample_github, sample_sources, corpus
):
    sample_github.fail_every = 5
    runs = [sync_request(source=source) for source in sample_sources]
    for run in runs:
        finished_run(run.pk, worker)
    sample_github.fail_every = None
    for full_name in SAMPLE_REPOSITORIES:
        corpus.assert_same(sample_github, full_name)


def test_a_worker_killed_mid_sync_and_a_new_sync_leave_no_duplicate_and_no_gap(
    worker, sample_github, sample_sources, corpus
):
    sample_github.delay_seconds = 0.05  # slow enough to be caught between two pages
    source = sample_sources[0]
    first = sync_request(source=source)
    wait_for(
        lambda: (
            Issue.objects.count() >= 5
            and SyncRun.objects.get(pk=first.pk).status == SyncRun.Status.RUNNING
        ),
        "a committed page",
        worker,
    )

    worker.kill()
    stored_at_kill = Issue.objects.count()
    assert SyncRun.objects.get(pk=first.pk).status == SyncRun.Status.RUNNING
    assert 0 < stored_at_kill < 15
    sample_github.delay_seconds = 0
    worker.start()
    # Until the lease runs out the run counts as active: asking again gives the same run.
    assert sync_request(source=source) == first
    wait_for(
        lambda: SyncRun.objects.get(pk=first.pk).lease_expires_at < timezone.now(),
        "the lease to expire",
        worker,
        timeout=LEASE_SECONDS + 5,
    )
    second = sync_request(source=source)

    assert second != first
    lost = SyncRun.objects.get(pk=first.pk)
    assert lost.status == SyncRun.Status.FAILED and lost.error.startswith("worker lost")
    finished = finished_run(second.pk, worker)
    corpus.assert_same(sample_github, SAMPLE_REPOSITORIES[0])
    # The second run started at the cursor: the issues stored before the kill cost nothing.
    assert finished.counts["created"] == 15 - stored_at_kill


def test_two_sync_requests_at_once_give_one_run(worker, sample_github, sample_sources, corpus):
    source = sample_sources[0]
    barrier = threading.Barrier(2)
    run_ids: list[int] = []

    def request() -> None:
        try:
            barrier.wait()
            run_ids.append(sync_request(source=source).pk)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # A second message for the same run too, as a broker redelivery would send.
    sync_source.apply_async(args=[source.pk, run_ids[0]], queue=QUEUE)

    assert len(set(run_ids)) == 1
    run = finished_run(run_ids[0], worker)
    assert SyncRun.objects.count() == 1 and run.attempts == 1
    corpus.assert_same(sample_github, SAMPLE_REPOSITORIES[0])


def test_issues_added_or_edited_between_syncs_arrive_on_the_next_scheduled_one(
    worker, sample_github, sample_sources, corpus
):
    source = sample_sources[0]
    finished_run(sync_request(source=source).pk, worker)
    sample_github.edit_issue("microsoft", "DeepSpeed", 7061, title="Edited upstream")
    sample_github.add_comment("microsoft", "DeepSpeed", 1722, body="Seen again on 0.14")
    sample_github.add_issue(
        "microsoft",
        "DeepSpeed",
        {"number": 9001, "title": "New hang", "state": "closed", "labels": ["bug"]},
        comments=[{"body": "py-spy dump", "user": "reporter"}],
    )
    sample_github.add_linked_fix("microsoft", "DeepSpeed", 9001, "commit", "f" * 40)
    # Make only this source due, then let beat's task find it.
    Source.objects.exclude(pk=source.pk).update(enabled=False)
    SyncRun.objects.update(queued_at=timezone.now() - timedelta(hours=2))

    sync_due_sources.apply_async(queue=QUEUE)
    wait_for(
        lambda: SyncRun.objects.filter(source=source, trigger="schedule").exists(),
        "the scheduled run",
        worker,
    )

    scheduled = SyncRun.objects.get(source=source, trigger="schedule")
    finished = finished_run(scheduled.pk, worker)
    assert finished.counts["created"] == 1 and finished.counts["updated"] == 2
    corpus.assert_same(sample_github, SAMPLE_REPOSITORIES[0])
