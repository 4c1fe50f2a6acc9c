"""An export job whose worker dies is queued again once its lease runs out and ends with one
file, one "done", every row, and its attempts counted; a second delivery never writes twice.

The worker test stops a real worker mid-export deterministically: a trigger on the job table
makes the worker's second progress write wait for an advisory lock the test holds, so the
worker is caught after a chunk is recorded and before the next, and is SIGKILLed there.
"""

import time
import uuid
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from exports.jobs import export_job_start
from exports.models import ExportJob
from exports.services import export_job_run, export_jobs_requeue_lost
from exports.tasks import recover_export_jobs
from tests.celery_worker import (
    CeleryWorker,
    queue_forget,
    redis_reachable,
    wait_for,
    worker_database_url,
)
from tests.conftest import require_postgres, require_service
from tests.exports.dataset_study import resolved_study_make
from tests.exports.test_export_jobs import direct_export

QUEUE = f"faults-exports-{uuid.uuid4().hex[:10]}"
LEASE_SECONDS = 2
HOLD_LOCK = 730_001
HOLD_TRIGGER = f"""
CREATE OR REPLACE FUNCTION fault_hold_export() RETURNS trigger AS $$
BEGIN
    IF OLD.attempts = 1 AND OLD.rows_done > 0 AND NEW.status = 'running' THEN
        PERFORM pg_advisory_xact_lock({HOLD_LOCK});
    END IF;
    RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER fault_hold_export BEFORE UPDATE ON exports_exportjob
    FOR EACH ROW EXECUTE FUNCTION fault_hold_export();
"""
DROP_TRIGGER = """
DROP TRIGGER IF EXISTS fault_hold_export ON exports_exportjob;
DROP FUNCTION IF EXISTS fault_hold_export();
"""


@pytest.fixture
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


def test_lost_jobs_are_queued_again_and_live_ones_left_alone(resolved_study, people, settings):
    settings.EXPORT_LEASE_SECONDS = 60
    settings.EXPORT_QUEUED_TIMEOUT_SECONDS = 600
    now = timezone.now()
    jobs = [export_job_start(study=resolved_study, user=people["manager"]) for _ in range(4)]
    live, silent, untaken, waiting = jobs
    ExportJob.objects.filter(pk=live.pk).update(status="running", heartbeat_at=now, attempts=1)
    ExportJob.objects.filter(pk=silent.pk).update(
        status="running", heartbeat_at=now - timedelta(seconds=61), attempts=1
    )
    ExportJob.objects.filter(pk=untaken.pk).update(created_at=now - timedelta(seconds=601))

    requeued = export_jobs_requeue_lost(now=now)

    assert sorted(job.pk for job in requeued) == sorted([silent.pk, untaken.pk])
    assert ExportJob.objects.get(pk=silent.pk).status == "queued"
    assert ExportJob.objects.get(pk=live.pk).status == "running"
    assert ExportJob.objects.get(pk=waiting.pk).status == "queued"
    assert export_jobs_requeue_lost(now=now) == []  # queued again just now: not lost again


def test_a_second_delivery_leaves_a_live_attempt_alone_and_takes_over_a_silent_one(
    resolved_study, people, settings, media_root
):
    settings.EXPORT_LEASE_SECONDS = 60
    job = export_job_start(study=resolved_study, user=people["manager"])
    ExportJob.objects.filter(pk=job.pk).update(
        status="running", heartbeat_at=timezone.now(), attempts=1
    )

    assert export_job_run(job_id=job.pk).status == "running"  # another worker holds it
    ExportJob.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=61))
    done = export_job_run(job_id=job.pk)

    assert (done.status, done.attempts, done.rows_done) == ("done", 2, done.rows_total)
    assert len(list((media_root / "exports").iterdir())) == 1


# --------------------------------------------------------------------------- a real worker


@pytest.fixture
def worker(transactional_db, settings, tmp_path, media_root):
    require_postgres()
    require_service(
        redis_reachable(settings.REDIS_URL),
        "Redis",
        "start it and set REDIS_URL=redis://127.0.0.1:6379/0",
    )
    settings.EXPORTS_QUEUE = QUEUE
    settings.EXPORT_LEASE_SECONDS = LEASE_SECONDS
    celery_worker = CeleryWorker(
        QUEUE,
        {
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "EXPORTS_QUEUE": QUEUE,
            "EXPORT_LEASE_SECONDS": str(LEASE_SECONDS),
            "EXPORT_CHUNK_SIZE": "5",
            "MEDIA_ROOT": str(media_root),
        },
        tmp_path,
    )
    try:
        yield celery_worker
    finally:
        celery_worker.stop()
        queue_forget(QUEUE, settings.REDIS_URL)
        with connection.cursor() as cursor:
            cursor.execute(DROP_TRIGGER)


def held_backends(holder: psycopg.Connection) -> list[int]:
    rows = holder.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND wait_event = 'advisory'"
    ).fetchall()
    return [pid for (pid,) in rows]


@pytest.mark.worker
def test_a_worker_killed_mid_export_is_replaced_and_the_job_ends_with_one_file(
    worker, codebook_version, sample_issues, people, make_user, media_root
):
    study = resolved_study_make(codebook_version, sample_issues, people, make_user)
    with connection.cursor() as cursor:
        cursor.execute(HOLD_TRIGGER)
    holder = psycopg.connect(worker_database_url(), autocommit=True)
    try:
        holder.execute("SELECT pg_advisory_lock(%s)", [HOLD_LOCK])
        worker.start()
        job = export_job_start(study=study, user=people["manager"], format="jsonl", raw=True)
        wait_for(lambda: held_backends(holder), "the worker held after its first chunk", worker)
        assert ExportJob.objects.filter(pk=job.pk, status="running", rows_done=5).exists()

        worker.kill()
        # The server would notice the dead client only at its next write; end its session as
        # the lost machine's would end.
        for pid in held_backends(holder):
            holder.execute("SELECT pg_terminate_backend(%s)", [pid])
        holder.execute("SELECT pg_advisory_unlock(%s)", [HOLD_LOCK])
    finally:
        holder.close()
    with connection.cursor() as cursor:
        cursor.execute(DROP_TRIGGER)
    killed_at = time.monotonic()
    worker.start()
    lease_out = timezone.now() + timedelta(seconds=LEASE_SECONDS)
    wait_for(lambda: timezone.now() > lease_out, "the lease to run out", worker)
    recover_export_jobs.apply_async(queue=QUEUE)  # what beat sends every LEASE / 2 seconds

    wait_for(
        lambda: ExportJob.objects.get(pk=job.pk).status in ("done", "failed"),
        "the job to finish",
        worker,
    )
    recovered = ExportJob.objects.get(pk=job.pk)
    assert recovered.status == "done", f"{recovered.error}\n{worker.logs()}"
    assert recovered.attempts == 2
    assert recovered.rows_done == recovered.rows_total == 12
    assert [path.name for path in (media_root / "exports").iterdir()] == [
        Path(recovered.file.name).name
    ]
    with recovered.file.open("rb") as stored:
        assert stored.read() == direct_export(study, "jsonl", raw=True)
    assert time.monotonic() - killed_at < 30
