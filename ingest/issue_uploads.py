"""Issue dumps uploaded into a study and imported in the background (`IssueImportJob`).

The file is read by `corpus.issue_import.issue_file_lines` and stored by
`corpus.services.issues_import`, as `import_issues` does: a bad line is listed with its number
and the command's message and skipped, good lines are stored a batch at a time (each batch in
its own transaction, so what was stored stays stored), and a file none of whose lines could be
imported fails with the command's words. Each stored batch's issues (not pull requests) join the
study's last round, and the job's row records the progress the page and the API show.

`ingest.dispatch.issue_upload_start` opens a job and sends its task; the task
(`ingest.tasks.import_issue_dump`) calls `issue_upload_run`.
"""

import logging
from datetime import datetime, timedelta
from typing import IO

import orjson
from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from common.exceptions import ApplicationError
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.records import IssueRecord
from corpus.selectors import repository_by_name
from corpus.services import IssueImportReport, import_workers, issues_import
from ingest.models import IssueImportJob
from labeling.services.studies import study_items_add

logger = logging.getLogger(__name__)

NOTHING_IMPORTED = "No issue could be imported."  # the command's words


def issue_upload_limit() -> int:
    """The largest issue dump accepted, in bytes (ISSUE_UPLOAD_MAX_BYTES)."""
    return settings.ISSUE_UPLOAD_MAX_BYTES


def issue_upload_run(*, job_id: int) -> IssueImportJob:
    """Import the job's file into the corpus and its issues into the study. A job that is not
    queued (a second delivery of its task) is left as it is, unless it is running without
    progress for INGEST_LEASE_SECONDS: its worker died, and this execution starts it again
    (stored issues are stored again unchanged, items already in the study are kept). The
    uploaded file is deleted once the job has run, whatever the outcome."""
    now = timezone.now()
    lost = Q(
        status=IssueImportJob.Status.RUNNING,
        heartbeat_at__lt=now - timedelta(seconds=settings.INGEST_LEASE_SECONDS),
    )
    claimed = (
        IssueImportJob.objects.filter(pk=job_id)
        .filter(Q(status=IssueImportJob.Status.QUEUED) | lost)
        .update(status=IssueImportJob.Status.RUNNING, started_at=now, heartbeat_at=now)
    )
    job = IssueImportJob.objects.select_related("study").get(pk=job_id)
    if not claimed:
        return job
    try:
        with job.file.open("rb") as stream:
            _progress(job_id, lines_total=_lines_total(stream))
            stream.seek(0)
            report = _import(job, stream)
    except ApplicationError as error:  # a study closed meanwhile
        job.refresh_from_db()
        _finish(job, IssueImportJob.Status.FAILED, error=error.message)
    except Exception as error:
        logger.exception("issue import %s failed", job_id)
        job.refresh_from_db()
        _finish(job, IssueImportJob.Status.FAILED, error=f"The import failed: {error}")
    else:
        refused = sorted({line for line, _ in report.errors})
        accepted = report.read - len(refused)
        job.lines_done = report.read
        job.lines_accepted = accepted
        job.issues_created, job.issues_updated = report.created, report.updated
        job.errors = [list(error) for error in report.errors[: IssueImportJob.ERRORS_KEPT]]
        job.errors_total = len(report.errors)
        if accepted:
            _finish(job, IssueImportJob.Status.DONE)
        else:
            _finish(job, IssueImportJob.Status.FAILED, error=NOTHING_IMPORTED)
    job.file.delete(save=False)
    IssueImportJob.objects.filter(pk=job_id).update(file="")
    job.refresh_from_db()
    return job


def issue_imports_to_resend(*, now: datetime | None = None) -> list[int]:
    """The jobs whose task should be sent again: queued and not sent for INGEST_RESEND_SECONDS
    (the message may have gone with a broker that was down or restarted), or running without
    progress for INGEST_LEASE_SECONDS (the worker died). A queued job is marked as sent now, so
    that the next tick leaves it alone; a delivery that finds the job taken does nothing."""
    now = now or timezone.now()
    resend = timedelta(seconds=settings.INGEST_RESEND_SECONDS)
    lease = timedelta(seconds=settings.INGEST_LEASE_SECONDS)
    queued = list(
        IssueImportJob.objects.filter(
            status=IssueImportJob.Status.QUEUED, heartbeat_at__lt=now - resend
        ).values_list("id", flat=True)
    )
    IssueImportJob.objects.filter(id__in=queued).update(heartbeat_at=now)
    lost = IssueImportJob.objects.filter(
        status=IssueImportJob.Status.RUNNING, heartbeat_at__lt=now - lease
    ).values_list("id", flat=True)
    return sorted([*queued, *lost])


UPLOAD_FOLDER = "issue-imports"
# A file younger than this may be a request's that has not committed its job yet: requests end
# within gunicorn's timeout, so an hour leaves none behind.
ORPHAN_AGE = timedelta(hours=1)


def issue_upload_files_sweep(*, now: datetime | None = None) -> list[str]:
    """Delete the uploaded dumps that no job holds, older than ORPHAN_AGE, and return their
    names. The file is written before its job's row commits; when the request then rolls back
    (an error after the upload, a database that went away), the row is gone and the file stays
    behind. A job's own file is deleted once the job has run (`issue_upload_run`)."""
    storage = IssueImportJob._meta.get_field("file").storage
    try:
        _, names = storage.listdir(UPLOAD_FOLDER)
    except FileNotFoundError:
        return []  # nothing uploaded yet
    held = set(IssueImportJob.objects.exclude(file="").values_list("file", flat=True))
    cutoff = (now or timezone.now()) - ORPHAN_AGE
    swept = []
    for name in sorted(names):
        path = f"{UPLOAD_FOLDER}/{name}"
        if path in held or storage.get_modified_time(path) > cutoff:
            continue
        storage.delete(path)
        swept.append(path)
    if swept:
        logger.info("%d uploaded issue dumps without a job deleted", len(swept))
    return swept


def _import(job: IssueImportJob, stream: IO[bytes]) -> IssueImportReport:
    study = job.study

    def on_batch(report: IssueImportReport, records: list[IssueRecord]) -> None:
        job.items_added += study_items_add(study=study, issue_ids=_issue_ids_of(records))
        _progress(
            job.pk,
            lines_done=report.read,
            items_added=job.items_added,
            heartbeat_at=timezone.now(),
        )

    return issues_import(
        objects=issue_file_lines(stream), on_batch=on_batch, workers=import_workers()
    )


def _issue_ids_of(records: list[IssueRecord]) -> list[int]:
    """The ids of the stored issues of these records (a refused record has none), by the
    repository names the corpus knows (a renamed repository's old name too)."""
    by_repository: dict[tuple[str, str], set[int]] = {}
    for record in records:
        by_repository.setdefault((record.owner, record.name), set()).add(record.number)
    issue_ids: list[int] = []
    for (owner, name), numbers in by_repository.items():
        repository = repository_by_name(owner=owner, name=name)
        if repository is not None:
            issue_ids += Issue.objects.filter(
                repository=repository, number__in=numbers
            ).values_list("id", flat=True)
    return issue_ids


def _lines_total(stream: IO[bytes]) -> int:
    """How many lines the import will read: the array's length, or the non-blank lines."""
    first = stream.read(1)
    while first and first.isspace():
        first = stream.read(1)
    if first == b"[":
        try:
            array = orjson.loads(first + stream.read())
        except orjson.JSONDecodeError:
            return 1  # the reader reports it as one bad line
        return len(array) if isinstance(array, list) else 1
    stream.seek(0)
    return sum(1 for line in stream if line.strip())


def _progress(job_id: int, **fields: object) -> None:
    # An UPDATE of its own, committed at once: the page reads it while the import runs.
    IssueImportJob.objects.filter(pk=job_id).update(**fields)


def _finish(job: IssueImportJob, status: str, *, error: str = "") -> None:
    job.status, job.error, job.finished_at = status, error, timezone.now()
    job.save(
        update_fields=[
            "status", "error", "finished_at", "lines_done", "lines_accepted", "issues_created",
            "issues_updated", "errors", "errors_total",
        ]
    )  # fmt: skip
