"""Writes of the dataset export: a study's dataset written to a stream in one of the formats,
and the work of an export job (the file on the default storage, progress as it goes)."""

import logging
import secrets
import tempfile
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from django.core.files import File
from django.utils import timezone

from common.exceptions import ApplicationError
from exports.dataset import CHUNK_SIZE, dataset_rows, dataset_shape
from exports.formats import FORMATS, csv_lines, csv_write, jsonl_lines, jsonl_write, parquet_write
from exports.models import ExportJob
from labeling.models import Study

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


def export_job_run(*, job_id: int, chunk_size: int = CHUNK_SIZE) -> ExportJob:
    """Write a queued job's file and record its progress after every chunk; a job that is done
    or failed already (a second delivery of its task) is left alone, and a running one (its
    worker died) starts again. Runs outside any transaction, so that progress is seen as it
    goes; a failure is recorded on the job with its reason."""
    claimed = ExportJob.objects.filter(
        pk=job_id, status__in=[ExportJob.Status.QUEUED, ExportJob.Status.RUNNING]
    ).update(status=ExportJob.Status.RUNNING, started_at=timezone.now(), rows_done=0, error="")
    job = ExportJob.objects.select_related("study__codebook_version__codebook").get(pk=job_id)
    if not claimed:
        return job

    def progress(rows_done: int) -> None:
        ExportJob.objects.filter(pk=job_id).update(rows_done=rows_done)

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
            # An unguessable name: the folder is never served, but a name should not tell.
            name = f"{job.study.slug}-{job.pk}-{secrets.token_hex(8)}.{job.format}"
            job.file.save(name, File(scratch), save=False)
    except Exception as error:  # recorded on the job, which is what people look at
        logger.exception("export job %s failed", job_id)
        job.status = ExportJob.Status.FAILED
        job.error = f"{type(error).__name__}: {error}"[:MAX_ERROR]
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "error", "finished_at"])
        return job
    job.status = ExportJob.Status.DONE
    job.rows_done = rows
    job.finished_at = timezone.now()
    job.save(update_fields=["status", "rows_done", "file", "finished_at"])
    return job


def dataset_export_chunks(
    *, study: Study, format: str, raw: bool = False, pseudonymise: bool = False
) -> Iterator[bytes]:
    """The study's dataset as CSV or JSONL bytes, a row at a time, for a streamed download
    (Parquet is written whole: its footer comes last)."""
    if format not in ("csv", "jsonl"):
        raise ApplicationError(f"Only csv and jsonl are streamed, not {format!r}.")
    shape = dataset_shape(study=study, raw=raw, pseudonymise=pseudonymise)
    rows = dataset_rows(shape=shape)
    if format == "jsonl":
        return jsonl_lines(rows)
    return csv_lines(rows, dimensions=shape.dimensions, annotators=shape.annotators)
