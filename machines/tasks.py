"""Celery tasks of machine annotators: thin adapters over `machines.runs` and `machines.similar`."""

from config.celery import app
from labeling.models import Study
from machines.runs import machine_run_execute
from machines.similar import study_neighbours_compute


@app.task(
    # Acknowledged when done and given back if the worker dies: a second delivery resumes the
    # run (labeled items are skipped, answers come from the cache).
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
)
def machine_run_task(run_id: int) -> dict:
    run = machine_run_execute(run_id=run_id)
    return {"run": run.pk, "status": run.status, "items_done": run.items_done}


@app.task(ignore_result=True)
def similar_index_task(study_id: int) -> int:
    """Compute a study's similar-issues index; how many items it holds."""
    study = Study.objects.filter(pk=study_id).first()
    if study is None:
        return 0
    return len(study_neighbours_compute(study=study))
