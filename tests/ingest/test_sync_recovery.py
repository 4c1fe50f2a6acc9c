"""Runs that lost their worker are recovered by beat's own entry, as export jobs are, with the
true reason recorded: a run a worker had claimed (killed mid-sync, or stopped before taking it
up again) is "the worker stopped during the run ... resumed", only a run never claimed is "no
worker took the run"; a paused source's lost run ends instead of showing "running" forever.
The run a worker really leaves behind is in test_worker.py."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from config.celery import app
from ingest.dispatch import sync_request
from ingest.models import SyncRun
from ingest.runs import sync_run_claim
from ingest.sync import sync_run_to_completion
from ingest.tasks import recover_sync_runs
from tests.ingest.conftest import SAMPLE_REPOSITORIES

DEEPSPEED = SAMPLE_REPOSITORIES[0]


def lease_expired(run: SyncRun, **fields) -> None:
    SyncRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1), **fields
    )


def test_beat_resumes_a_run_whose_worker_stopped_during_it(
    sample_github, make_source, corpus, django_capture_on_commit_callbacks
):
    source = make_source(DEEPSPEED)
    lost = sync_request(source=source, enqueue=False)
    sync_run_claim(run_id=lost.pk, worker="host:4242:task-1")
    lease_expired(lost)

    with django_capture_on_commit_callbacks() as callbacks:
        assert recover_sync_runs() == 1

    lost.refresh_from_db()
    assert lost.status == SyncRun.Status.FAILED and lost.finished_at is not None
    assert lost.error == (
        "worker lost: the worker stopped during the run (host:4242:task-1); resumed"
    )
    [new] = SyncRun.objects.filter(source=source, status=SyncRun.Status.QUEUED)
    assert new.trigger == SyncRun.Trigger.SCHEDULE and new.task_id
    assert len(callbacks) == 1  # its task, sent once committed
    assert sync_run_to_completion(run_id=new.pk, worker="next").status == SyncRun.Status.DONE
    corpus.assert_same(sample_github, DEEPSPEED)
    with django_capture_on_commit_callbacks() as callbacks:
        assert recover_sync_runs() == 0
    assert callbacks == []


def test_a_run_stopped_between_two_executions_is_not_one_no_worker_took(
    github, make_source, django_capture_on_commit_callbacks
):
    # Claimed, then queued again for a retry whose message went with the killed worker.
    retried = sync_request(source=make_source("acme/retried"), enqueue=False)
    lease_expired(retried, attempts=1, started_at=timezone.now(), worker="")
    untaken = sync_request(source=make_source("acme/untaken"), enqueue=False)
    lease_expired(untaken)
    waiting = sync_request(source=make_source("acme/waiting"), enqueue=False)
    lease_expired(waiting, status=SyncRun.Status.WAITING, attempts=1)

    with django_capture_on_commit_callbacks() as callbacks:
        assert recover_sync_runs() == 3

    errors = {run.pk: run.error for run in SyncRun.objects.filter(status=SyncRun.Status.FAILED)}
    assert errors == {
        retried.pk: "worker lost: the run stopped between two executions (after a pause or a "
        "retry); resumed",
        untaken.pk: "worker lost: no worker took the run; queued again",
        waiting.pk: "worker lost: nobody resumed the run after the rate-limit reset; resumed",
    }
    assert SyncRun.objects.filter(status=SyncRun.Status.QUEUED).count() == len(callbacks) == 3


def test_a_paused_sources_lost_run_ends_with_its_reason_and_nothing_is_queued(
    github, make_source, django_capture_on_commit_callbacks
):
    source = make_source("acme/paused")
    lost = sync_request(source=source, enqueue=False)
    sync_run_claim(run_id=lost.pk, worker="host:1:task")
    source.enabled = False
    source.save(update_fields=["enabled"])
    lease_expired(lost)

    with django_capture_on_commit_callbacks() as callbacks:
        assert recover_sync_runs() == 1

    lost.refresh_from_db()
    assert lost.status == SyncRun.Status.FAILED
    assert lost.error == (
        "worker lost: the worker stopped during the run (host:1:task); not resumed while the "
        "source is paused"
    )
    assert callbacks == [] and SyncRun.objects.count() == 1


def test_a_run_whose_lease_holds_is_left_alone(github, make_source):
    run = sync_request(source=make_source("acme/live"), enqueue=False)
    sync_run_claim(run_id=run.pk, worker="host:1:live")

    assert recover_sync_runs() == 0
    run.refresh_from_db()
    assert run.status == SyncRun.Status.RUNNING and run.worker == "host:1:live"


def test_beat_schedules_the_recovery_twice_a_lease_on_the_ingest_queue():
    entry = settings.CELERY_BEAT_SCHEDULE["recover-sync-runs"]

    app.loader.import_default_modules()
    assert entry["task"] in app.tasks
    assert entry["task"] == recover_sync_runs.name
    assert entry["schedule"] == min(60, max(1, settings.INGEST_LEASE_SECONDS // 2))
    assert entry["options"]["queue"] == settings.INGEST_QUEUE
