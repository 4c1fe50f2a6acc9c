"""Export jobs: queued by a manager, run by the task (a plain call, the embedded default's
in-process mode, and a real Celery worker on Redis), with progress, the file on the default
storage, failures recorded, and a second delivery harmless."""

import io
import uuid
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from common.exceptions import ApplicationError, PermissionDeniedError
from config.celery import app
from exports.jobs import export_job_start
from exports.models import ExportJob
from exports.services import dataset_export_write, export_job_run
from labeling.models import Study
from tests.celery_worker import (
    CeleryWorker,
    queue_forget,
    redis_reachable,
    wait_for,
    worker_database_url,
)
from tests.conftest import require_postgres, require_service
from tests.exports.dataset_study import resolved_study_make

QUEUE = f"exports-tests-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return Path(settings.MEDIA_ROOT)


def direct_export(study, file_format: str, **options) -> bytes:
    """The export of the study as stored (PostgreSQL orders a JSON object's keys its own way)."""
    buffer = io.BytesIO()
    stored = Study.objects.get(pk=study.pk)
    dataset_export_write(study=stored, format=file_format, output=buffer, **options)
    return buffer.getvalue()


def test_a_manager_queues_a_job_whose_task_is_sent_once_committed(
    resolved_study, people, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        job = export_job_start(
            study=resolved_study, user=people["manager"], format="csv", raw=True, pseudonymise=True
        )

    assert len(callbacks) == 1
    assert (job.status, job.rows_done, job.rows_total) == ("queued", 0, 12)
    assert (job.format, job.raw, job.pseudonymise, job.requested_by) == (
        "csv", True, True, people["manager"],
    )  # fmt: skip


def test_a_job_writes_its_file_and_records_its_progress_chunk_by_chunk(
    resolved_study, people, media_root
):
    job = export_job_start(study=resolved_study, user=people["manager"], format="jsonl", raw=True)

    with CaptureQueriesContext(connection) as queries:
        done = export_job_run(job_id=job.pk, chunk_size=5)

    assert done.status == "done" and done.finished_at is not None
    assert (done.rows_done, done.rows_total, done.percent) == (12, 12, 100)
    progress = [
        query["sql"]
        for query in queries
        if "rows_done" in query["sql"] and "UPDATE" in query["sql"]
    ]
    assert len(progress) >= 3  # after 5, 10 and 12 rows, then the final save
    assert done.file.name.startswith("exports/") and done.file.name.endswith(".jsonl")
    assert (media_root / done.file.name).exists()
    with done.file.open("rb") as stored:
        assert stored.read() == direct_export(resolved_study, "jsonl", raw=True)


def test_a_second_delivery_of_a_finished_job_changes_nothing(resolved_study, people):
    job = export_job_start(study=resolved_study, user=people["manager"], format="parquet")
    first = export_job_run(job_id=job.pk)

    again = export_job_run(job_id=job.pk)

    assert again.file.name == first.file.name and again.finished_at == first.finished_at


def test_a_job_that_cannot_write_its_file_fails_with_the_reason(
    resolved_study, people, settings, tmp_path
):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the media folder should be")
    settings.MEDIA_ROOT = str(blocker)
    job = export_job_start(study=resolved_study, user=people["manager"])

    failed = export_job_run(job_id=job.pk)

    assert failed.status == "failed" and failed.finished_at is not None
    assert failed.error and not failed.file


@pytest.mark.parametrize("role", ["annotator1", "adjudicator", "outsider"])
def test_only_managers_start_exports(resolved_study, people, role):
    with pytest.raises(PermissionDeniedError):
        export_job_start(study=resolved_study, user=people[role])
    assert not ExportJob.objects.exists()


def test_an_unknown_format_is_refused(resolved_study, people):
    with pytest.raises(ApplicationError, match="The format is one of csv, jsonl, parquet"):
        export_job_start(study=resolved_study, user=people["manager"], format="xlsx")


@pytest.fixture
def in_process_tasks():
    """The embedded default without Redis: tasks run in the process that sends them."""
    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    yield
    app.conf.task_always_eager = eager


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_the_job_runs_in_process_once_committed(
    codebook_version, sample_issues, people, make_user, in_process_tasks
):
    study = resolved_study_make(codebook_version, sample_issues, people, make_user)

    job = export_job_start(study=study, user=people["manager"], format="csv")

    job.refresh_from_db()
    assert job.status == "done" and job.rows_done == 12
    with job.file.open("rb") as stored:
        assert stored.read() == direct_export(study, "csv")


# --------------------------------------------------------------------------- a real worker


@pytest.fixture
def export_worker(transactional_db, settings, tmp_path, media_root):
    require_postgres()
    require_service(
        redis_reachable(settings.REDIS_URL),
        "Redis",
        "start it and set REDIS_URL=redis://127.0.0.1:6379/0",
    )
    settings.EXPORTS_QUEUE = QUEUE
    worker = CeleryWorker(
        QUEUE,
        {
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": settings.REDIS_URL,
            "EXPORTS_QUEUE": QUEUE,
            "MEDIA_ROOT": str(media_root),
        },
        tmp_path,
    )
    worker.start()
    yield worker
    worker.stop()
    queue_forget(QUEUE, settings.REDIS_URL)


@pytest.mark.worker
def test_a_celery_worker_runs_the_job_through_the_broker(
    export_worker, codebook_version, sample_issues, people, make_user
):
    study = resolved_study_make(codebook_version, sample_issues, people, make_user)

    job = export_job_start(study=study, user=people["manager"], format="parquet", raw=True)

    wait_for(
        lambda: ExportJob.objects.get(pk=job.pk).status in ("done", "failed"),
        "the job to finish",
        export_worker,
    )
    job.refresh_from_db()
    assert job.status == "done", f"{job.status} {job.error}\n{export_worker.logs()}"
    assert job.rows_done == job.rows_total == 12
    with job.file.open("rb") as stored:
        assert stored.read() == direct_export(study, "parquet", raw=True)
