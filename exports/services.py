"""Writes of the dataset export: a study's dataset written to a stream in one of the formats,
and the work of an export job (the file on the default storage, progress as it goes)."""

import logging
import re
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import IO, Any

from django.conf import settings
from django.core.files import File
from django.db import transaction
from django.db.models import Q
from django.db.models.functions import Coalesce
from django.http import FileResponse, HttpResponseBase, StreamingHttpResponse
from django.utils import timezone

from common.exceptions import ApplicationError
from exports.dataset import CHUNK_SIZE, dataset_rows, dataset_shape
from exports.formats import (
    CONTENT_TYPES,
    FORMATS,
    csv_lines,
    csv_write,
    jsonl_lines,
    jsonl_write,
    parquet_write,
)
from exports.models import ExportJob
from labeling.models import Study, StudyItem

logger = logging.getLogger(__name__)

MAX_ERROR = 2_000


def dataset_export_write(
    *,
    study: Study,
    format: str,
    output: IO[bytes],
    raw: bool = False,
    pseudonymise: bool = False,
    chunk_size: int = CHUNK_SIZE,
    on_progress: Callable[[int], None] | None = None,
) -> int:
    """Write the study's dataset (see `exports.dataset`) to a binary stream as csv, jsonl or
    parquet, reading `chunk_size` items at a time. `on_progress` hears the number of rows
    written after each chunk. Returns the number of rows."""
    if format not in FORMATS:
        raise ApplicationError(
            f"The format is one of {', '.join(FORMATS)}, not {format!r}.", {"format": format}
        )
    shape = dataset_shape(study=study, raw=raw, pseudonymise=pseudonymise)
    rows: Iterable[dict[str, Any]] = dataset_rows(shape=shape, chunk_size=chunk_size)
    if on_progress is not None:
        rows = _reporting(rows, every=chunk_size, report=on_progress)
    if format == "jsonl":
        return jsonl_write(rows, output)
    if format == "csv":
        return csv_write(rows, output, dimensions=shape.dimensions, annotators=shape.annotators)
    return parquet_write(
        rows,
        output,
        dimensions=shape.dimensions,
        annotators=shape.annotators,
        metadata=shape.metadata,
    )


def _reporting(
    rows: Iterable[dict[str, Any]], *, every: int, report: Callable[[int], None]
) -> Iterator[dict[str, Any]]:
    done = 0
    for row in rows:
        yield row
        done += 1
        if done % every == 0:
            report(done)
    report(done)


class _ClaimLost(Exception):
    """The job was taken by a newer execution (or queued again) while this one ran."""


def export_lease() -> timedelta:
    return timedelta(seconds=settings.EXPORT_LEASE_SECONDS)


def export_job_run(*, job_id: int, chunk_size: int = CHUNK_SIZE) -> ExportJob:
    """Write a queued job's file and record its progress after every chunk.

    The job is claimed in a locked read: a queued job, or a running one whose worker went
    silent for the lease (it died; the job starts again). A done, failed or live running job
    (a second delivery of its task) is left alone. Each claim counts an attempt, and every
    progress write and the final one go through only while that count is still this
    execution's: an execution overtaken by a newer one stops, and removes the file it may have
    written, so a job ends with one file. Runs outside any transaction, so that progress is
    seen as it goes; a failure is recorded on the job with its reason."""
    job = _export_job_claim(job_id=job_id)
    if job is None:
        return _export_job_as_stored(job_id)
    attempt = job.attempts
    mine = ExportJob.objects.filter(pk=job_id, status=ExportJob.Status.RUNNING, attempts=attempt)

    def progress(rows_done: int) -> None:
        if not mine.update(rows_done=rows_done, heartbeat_at=timezone.now()):
            raise _ClaimLost

    name = ""
    try:
        with tempfile.TemporaryFile() as scratch:
            rows = dataset_export_write(
                study=job.study,
                format=job.format,
                output=scratch,
                raw=job.raw,
                pseudonymise=job.pseudonymise,
                chunk_size=chunk_size,
                on_progress=progress,
            )
            scratch.seek(0)
            # An unguessable name: the folder is never served, but a name should not tell. The
            # attempt in it lets a finished attempt find files that killed ones left behind.
            name = job.file.storage.save(
                f"exports/{job.study.slug}-{job.pk}-a{attempt}-{secrets.token_hex(8)}.{job.format}",
                File(scratch),
            )
    except _ClaimLost:
        logger.warning("export job %s: attempt %s was overtaken, stopping", job_id, attempt)
        return _export_job_as_stored(job_id)
    except Exception as error:  # recorded on the job, which is what people look at
        logger.exception("export job %s failed", job_id)
        mine.update(
            status=ExportJob.Status.FAILED,
            error=f"{type(error).__name__}: {error}"[:MAX_ERROR],
            finished_at=timezone.now(),
        )
        return _export_job_as_stored(job_id)
    now = timezone.now()
    if mine.update(
        status=ExportJob.Status.DONE, rows_done=rows, file=name, finished_at=now, heartbeat_at=now
    ):
        _export_job_files_remove(job=job, keep=name)
    else:
        logger.warning("export job %s: attempt %s was overtaken at the end", job_id, attempt)
        job.file.storage.delete(name)
    return _export_job_as_stored(job_id)


def _export_job_as_stored(job_id: int) -> ExportJob:
    """The job as this or another execution left it: what `export_job_run` answers."""
    return ExportJob.objects.select_related("study").get(pk=job_id)


@transaction.atomic
def _export_job_claim(*, job_id: int) -> ExportJob | None:
    """Take the job for one more attempt, or None when it is not claimable."""
    job = (
        ExportJob.objects.select_for_update(of=("self",))
        .select_related("study__codebook_version__codebook")
        .get(pk=job_id)
    )
    now = timezone.now()
    lost = job.heartbeat_at is None or job.heartbeat_at < now - export_lease()
    if not (
        job.status == ExportJob.Status.QUEUED or (job.status == ExportJob.Status.RUNNING and lost)
    ):
        return None
    if job.status == ExportJob.Status.RUNNING:
        logger.warning(
            "export job %s: attempt %s lost its worker, starting again", job.pk, job.attempts
        )
    job.status = ExportJob.Status.RUNNING
    job.attempts += 1
    job.started_at = job.heartbeat_at = now
    job.rows_done = 0
    job.error = ""
    job.save(
        update_fields=["status", "attempts", "started_at", "heartbeat_at", "rows_done", "error"]
    )
    return job


def _export_job_files_remove(*, job: ExportJob, keep: str) -> None:
    """Remove what earlier attempts of the job wrote (a worker killed between writing its file
    and recording it leaves one behind)."""
    pattern = re.compile(
        rf"{re.escape(job.study.slug)}-{job.pk}-a\d+-[0-9a-f]{{16}}\.{re.escape(job.format)}"
    )
    storage = job.file.storage
    try:
        _, files = storage.listdir("exports")
    except FileNotFoundError:
        return
    for file_name in files:
        path = f"exports/{file_name}"
        if path != keep and pattern.fullmatch(file_name):
            logger.info("export job %s: removing %s, left by an earlier attempt", job.pk, path)
            storage.delete(path)


@transaction.atomic
def export_jobs_requeue_lost(*, now: datetime | None = None) -> list[ExportJob]:
    """Put back in the queue the jobs whose worker was lost: running ones silent for the lease
    (a SIGKILL, an OOM kill, a lost machine; the broker would redeliver their message only after
    its visibility timeout of hours) and queued ones nobody took within
    EXPORT_QUEUED_TIMEOUT_SECONDS (a message lost with the broker). The caller sends their
    tasks; an execution of the lost attempt that is still alive stops at its next progress
    write, as the job is no longer running under its attempt."""
    now = now or timezone.now()
    queued_cutoff = now - timedelta(seconds=settings.EXPORT_QUEUED_TIMEOUT_SECONDS)
    lost = (
        ExportJob.objects.select_for_update(skip_locked=True)
        .annotate(since=Coalesce("heartbeat_at", "created_at"))
        .filter(
            Q(status=ExportJob.Status.RUNNING, since__lt=now - export_lease())
            | Q(status=ExportJob.Status.QUEUED, since__lt=queued_cutoff)
        )
    )
    jobs = list(lost)
    for job in jobs:
        logger.warning(
            "export job %s (%s, attempt %s) lost its worker: queued again",
            job.pk,
            job.status,
            job.attempts,
        )
    ExportJob.objects.filter(pk__in=[job.pk for job in jobs]).update(
        status=ExportJob.Status.QUEUED, heartbeat_at=now
    )
    return jobs


# Parquet's footer comes last: the file is written whole before its first byte can be sent, in
# the request's time and memory (pyarrow's some 90 MB stay in the process after). A download
# writes it only for a study this small; a larger one goes through a job (or the command).
DIRECT_PARQUET_MAX_ITEMS = 5_000


@dataclass
class DatasetDownload:
    """A dataset to send in a response: CSV and JSONL as `chunks` made while they are sent,
    Parquet as a temporary `file` written whole (removed once closed, with the response)."""

    filename: str
    content_type: str
    chunks: Iterator[bytes] | None = None
    file: IO[bytes] | None = None

    def response(self) -> HttpResponseBase:
        """The download as an attachment, for the page and the API alike."""
        if self.file is not None:
            return FileResponse(
                self.file,
                as_attachment=True,
                filename=self.filename,
                content_type=self.content_type,
            )
        response = StreamingHttpResponse(self.chunks, content_type=self.content_type)
        response["Content-Disposition"] = f'attachment; filename="{self.filename}"'
        return response


def dataset_export_download(
    *, study: Study, format: str, raw: bool = False, pseudonymise: bool = False
) -> DatasetDownload:
    """The study's dataset for a download (the caller checked the user may export it): CSV and
    JSONL of any size streamed from the first byte, a few thousand items read at a time, so
    memory stays flat; Parquet only up to DIRECT_PARQUET_MAX_ITEMS items, else an
    ApplicationError that says to start an export. Pseudonymising means something only with
    raw labels, as in a job."""
    if format not in FORMATS:
        raise ApplicationError(
            f"The format is one of {', '.join(FORMATS)}, not {format!r}.", {"format": format}
        )
    pseudonymise = raw and pseudonymise
    filename = ExportJob(study=study, format=format, raw=raw, pseudonymise=pseudonymise).filename
    if format != "parquet":
        return DatasetDownload(
            filename=filename,
            content_type=CONTENT_TYPES[format],
            chunks=dataset_export_chunks(
                study=study, format=format, raw=raw, pseudonymise=pseudonymise
            ),
        )
    items = StudyItem.objects.filter(study=study).count()
    if items > DIRECT_PARQUET_MAX_ITEMS:
        raise ApplicationError(
            f"A Parquet file is written whole before it is sent, and this study has more than "
            f"{DIRECT_PARQUET_MAX_ITEMS:,} items: start an export and download its file when it "
            "is done, or choose CSV or JSONL, which stream at once.",
            {"items": items, "max_items": DIRECT_PARQUET_MAX_ITEMS},
        )
    scratch = tempfile.TemporaryFile()  # noqa: SIM115 (closed with the response)
    try:
        dataset_export_write(
            study=study, format=format, output=scratch, raw=raw, pseudonymise=pseudonymise
        )
    except BaseException:
        scratch.close()
        raise
    scratch.seek(0)
    return DatasetDownload(filename=filename, content_type=CONTENT_TYPES[format], file=scratch)


def dataset_export_chunks(
    *,
    study: Study,
    format: str,
    raw: bool = False,
    pseudonymise: bool = False,
    chunk_size: int = CHUNK_SIZE,
) -> Iterator[bytes]:
    """The study's dataset as CSV or JSONL bytes for a streamed download, a few hundred rows a
    piece (Parquet is written whole: its footer comes last). The shape is read now, the rows
    `chunk_size` items at a time as the pieces are asked for."""
    if format not in ("csv", "jsonl"):
        raise ApplicationError(f"Only csv and jsonl are streamed, not {format!r}.")
    shape = dataset_shape(study=study, raw=raw, pseudonymise=pseudonymise)
    rows = dataset_rows(shape=shape, chunk_size=chunk_size)
    if format == "jsonl":
        return jsonl_lines(rows)
    return csv_lines(rows, dimensions=shape.dimensions, annotators=shape.annotators)
