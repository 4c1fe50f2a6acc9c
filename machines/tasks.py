"""Celery tasks of machine annotators: thin adapters over `machines.services`."""

from celery import shared_task

from machines.runs import machine_run_execute


@shared_task(
    # Acknowledged when done and given back if the worker dies: a second delivery resumes the
    # run (labeled items are skipped, answers come from the cache).
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def machine_run_task(run_id: int) -> dict:
    run = machine_run_execute(run_id=run_id)
    return {"run": run.pk, "status": run.status, "items_done": run.items_done}
