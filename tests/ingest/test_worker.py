"""The sync in a real Celery worker (a subprocess) on the real Redis broker, against the
stand-in GitHub, with the test database on PostgreSQL (another process cannot see SQLite's
in-memory test database). Not eager mode: Celery's docs warn that it only emulates a worker.

Each test session uses a queue of its own, purged around every test, so that messages left by
earlier runs never reach these workers. Results are awaited by polling the SyncRun row with a
deadline. Needs PostgreSQL and Redis: skipped without them, failed in CI.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from corpus.models import Issue
from ingest.dispatch import sync_request
from ingest.models import Source, SyncRun
from ingest.sources import source_create
from ingest.tasks import recover_sync_runs, sync_due_sources, sync_source
from tests.celery_worker import (
    CeleryWorker,
    queue_forget,
    queue_purge,
    redis_reachable,
    wait_for,
    worker_database_url,
)
from tests.conftest import require_postgres, require_service
from tests.ingest.conftest import SAMPLE_REPOSITORIES

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

QUEUE = f"ingest-tests-{uuid.uuid4().hex[:10]}"
LEASE_SECONDS = 3
FINISHED = (SyncRun.Status.DONE, SyncRun.Status.FAILED)


@pytest.fixture
def worker(transactional_db, github, settings, tmp_path) -> Iterator[CeleryWorker]:
    require_postgres()
    require_service(
        redis_reachable(settings.REDIS_URL),
        "Redis",
        "start it with `redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' "
        "--appendonly no` and set REDIS_URL=redis://127.0.0.1:6379/0",
    )
    settings.INGEST_QUEUE = QUEUE
    settings.INGEST_LEASE_SECONDS = LEASE_SECONDS
    queue_purge(QUEUE)
    assert github.base_url is not None
    celery_worker = CeleryWorker(
        QUEUE,
        {
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "GITHUB_API_URL": github.base_url,
            "GITHUB_TOKEN": "",
            "INGEST_QUEUE": QUEUE,
            "INGEST_LEASE_SECONDS": str(LEASE_SECONDS),
            "INGEST_PER_PAGE": "5",
            "INGEST_RETRY_BACKOFF_SECONDS": "1",
            "INGEST_RETRY_BACKOFF_MAX_SECONDS": "2",
            "LOG_LEVEL": "WARNING",
        },
        tmp_path,
        # Two threads: a second message for the same run can arrive while one runs.
        concurrency=2,
    )
    celery_worker.start()
    yield celery_worker
    celery_worker.stop()
    queue_forget(QUEUE, settings.REDIS_URL)


def finished_run(run_id: int, worker: CeleryWorker) -> SyncRun:
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


def test_beat_resumes_a_sync_whose_worker_was_killed_and_says_so(
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
    killed_worker = SyncRun.objects.get(pk=first.pk).worker
    sample_github.delay_seconds = 0
    worker.start()
    assert recover_sync_runs() == 0  # its lease still runs
    wait_for(
        lambda: SyncRun.objects.get(pk=first.pk).lease_expires_at < timezone.now(),
        "the lease to expire",
        worker,
        timeout=LEASE_SECONDS + 5,
    )

    assert recover_sync_runs() == 1  # beat's tick, nobody pressing "Sync now"

    lost = SyncRun.objects.get(pk=first.pk)
    assert lost.status == SyncRun.Status.FAILED
    assert lost.error == (
        f"worker lost: the worker stopped during the run ({killed_worker}); resumed"
    )
    [second] = SyncRun.objects.exclude(pk=first.pk)
    finished = finished_run(second.pk, worker)
    corpus.assert_same(sample_github, SAMPLE_REPOSITORIES[0])
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
