"""Celery tasks of the exports: thin adapters that take ids and call `exports.services`.

Whoever sends a task imports this module (`exports.jobs`); it never imports a sender. Messages
go through `apply_async`, which honours CELERY_TASK_ALWAYS_EAGER: in the embedded default
(no REDIS_URL) the export runs in the process that asked for it.
"""

from django.conf import settings
from django.db import transaction

from config.celery import app
from exports.dataset import CHUNK_SIZE
from exports.models import ExportJob
from exports.services import export_job_run, export_jobs_requeue_lost


@app.task(
    # Acknowledged when done and given back if the worker dies: the job then starts again.
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,  # the job row is the result
)
def export_dataset(job_id: int) -> str:
    chunk_size = settings.EXPORT_CHUNK_SIZE or CHUNK_SIZE
    return export_job_run(job_id=job_id, chunk_size=chunk_size).status


@app.task(ignore_result=True)
def recover_export_jobs() -> int:
    """Beat's tick: queue again the jobs that lost their worker (see
    `exports.services.export_jobs_requeue_lost`). Returns how many."""
    jobs = export_jobs_requeue_lost()
    for job in jobs:
        export_job_enqueue(job)
    return len(jobs)


def export_job_enqueue(job: ExportJob) -> None:
    """Send the job's task once the current transaction commits. `robust`: a broker that is
    down must not turn a committed request into an error page; the job stays queued and says
    so on the page."""
    job_id = job.pk

    def send_export_dataset() -> None:
        export_dataset.apply_async(args=[job_id], queue=settings.EXPORTS_QUEUE)

    transaction.on_commit(send_export_dataset, robust=True)
