"""Machine annotators and their runs: adding an annotator to a study (its settings checked) and
queueing a run. Running it is machines.runs'.
"""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError
from labeling.models import Study
from machines.models import MachineAnnotator, MachineRun

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")


# ---------------------------------------------------------------------------------------------
# Annotators
# ---------------------------------------------------------------------------------------------


MAX_SEED = 2**31 - 1


def machine_annotator_check(
    *,
    base_url: str,
    model: str,
    api_key_env: str,
    temperature: float,
    samples: int,
    seed: int | None,
) -> None:
    errors: dict[str, list[str]] = {}
    if not re.match(r"^https?://[^/\s]+", base_url or ""):
        errors["base_url"] = ["An http(s) URL of an OpenAI-compatible endpoint, e.g. .../v1."]
    if not model or len(model) > 200:
        errors["model"] = ["The model's name, as the endpoint knows it."]
    if api_key_env and not ENV_NAME.match(api_key_env):
        errors["api_key_env"] = [
            "The NAME of an environment variable holding the key (capitals, digits, _), "
            "never the key itself."
        ]
    if not 0 <= temperature <= 2:
        errors["temperature"] = ["Between 0 and 2."]
    if not 1 <= samples <= 20:
        errors["samples"] = ["Between 1 and 20 samples per item."]
    if seed is not None and not 0 <= seed <= MAX_SEED:
        errors["seed"] = [f"Between 0 and {MAX_SEED}."]
    if errors:
        field_name, messages = next(iter(errors.items()))
        raise ApplicationError(f"{field_name}: {messages[0]}", errors)


def machine_annotator_get_or_create(
    *,
    study: Study,
    base_url: str,
    model: str,
    name: str = "",
    api_key_env: str = "",
    temperature: float = 0.0,
    seed: int | None = None,
    samples: int = 1,
    user=None,
) -> tuple[MachineAnnotator, bool]:
    """The study's LLM annotator of this name (the model's name when none is given), created
    with these settings when new. An existing one with other settings is refused: its labels
    were made with its own settings, and a name stands for one set of them."""
    machine_annotator_check(
        base_url=base_url,
        model=model,
        api_key_env=api_key_env,
        temperature=temperature,
        samples=samples,
        seed=seed,
    )
    name = (name or model)[:100]
    wanted = {
        "base_url": base_url.rstrip("/"),
        "model": model,
        "api_key_env": api_key_env,
        "temperature": temperature,
        "seed": seed,
        "samples": samples,
    }
    with transaction.atomic():
        annotator, created = MachineAnnotator.objects.get_or_create(
            study=study,
            name=name,
            defaults={**wanted, "kind": MachineAnnotator.Kind.LLM, "created_by": user},
        )
    if not created:
        differing = sorted(k for k, v in wanted.items() if getattr(annotator, k) != v)
        if differing:
            raise ApplicationError(
                f"The machine annotator {name!r} of {study.slug} has other settings "
                f"({', '.join(differing)}): give this one another name.",
                {"name": [f"{name!r} is taken by an annotator with other settings."]},
            )
    return annotator, created


# ---------------------------------------------------------------------------------------------
# Runs: queueing
# ---------------------------------------------------------------------------------------------


def machine_run_request(*, annotator: MachineAnnotator, enqueue: bool = True) -> MachineRun:
    """A new queued run of the annotator over its study's items; its Celery task is sent once
    the run is committed (not with `enqueue=False`: the caller runs it in its own process with
    machines.runs.machine_run_execute)."""
    run = MachineRun.objects.create(
        annotator=annotator, codebook_version_id=annotator.study.codebook_version_id
    )
    if enqueue:
        _send_on_commit(run)
    return run


# ---------------------------------------------------------------------------------------------
# The scikit-learn annotator
# ---------------------------------------------------------------------------------------------

CLASSICAL_NAME = "scikit-learn"


def classical_annotator_get_or_create(*, study: Study, user=None) -> MachineAnnotator:
    """The study's one classical annotator (machines.classical), made on first use. Its
    model is retrained on the study's gold labels at every run."""
    with transaction.atomic():
        annotator = MachineAnnotator.objects.filter(
            study=study, kind=MachineAnnotator.Kind.CLASSICAL
        ).first()
        if annotator is not None:
            return annotator
        if MachineAnnotator.objects.filter(study=study, name=CLASSICAL_NAME).exists():
            raise ApplicationError(
                f"The name {CLASSICAL_NAME!r} is taken by a language-model annotator of "
                f"{study.slug}.",
                {"name": [f"{CLASSICAL_NAME!r} is taken."]},
            )
        return MachineAnnotator.objects.create(
            study=study,
            name=CLASSICAL_NAME,
            kind=MachineAnnotator.Kind.CLASSICAL,
            model="tfidf-logistic-regression",
            created_by=user,
        )


def classical_run_request(*, study: Study, enqueue: bool = True, user=None) -> MachineRun:
    """A queued run of the study's classical annotator (made on first use): trained on the
    gold labels the study has when it runs. Queued as a Celery task as `machine_run_request`
    queues a language model's run."""
    annotator = classical_annotator_get_or_create(study=study, user=user)
    return machine_run_request(annotator=annotator, enqueue=enqueue)


def machine_run_is_resumable(run: MachineRun, *, now=None) -> bool:
    """A run that stopped before its end: failed (the endpoint refused it, the worker raised),
    finished with items that failed, or running under a lease nobody renewed (its worker died).
    Resuming labels only what it has not labeled yet; answers already given come from the cache."""
    now = now or timezone.now()
    if run.status == MachineRun.Status.FAILED:
        return True
    if run.status == MachineRun.Status.FINISHED:
        return run.items_failed > 0
    if run.status == MachineRun.Status.RUNNING:
        return run.lease_expires_at is None or run.lease_expires_at <= now
    return False


def machine_run_resume(*, run: MachineRun, enqueue: bool = True) -> MachineRun:
    """Queue a stopped run again (see `machine_run_is_resumable`): its items without labels are
    tried again, its failures counted afresh. Its task is sent once committed (not with
    `enqueue=False`, as in `machine_run_request`)."""
    with transaction.atomic():
        run = MachineRun.objects.select_for_update().get(pk=run.pk)
        if not machine_run_is_resumable(run):
            raise ApplicationError(
                f"Run {run.pk} is {run.get_status_display().lower()}: only a failed or "
                "interrupted run, or one with failed items, is resumed."
            )
        run.status = MachineRun.Status.QUEUED
        run.error = ""
        run.items_failed = 0
        run.item_errors = []
        run.finished_at = None
        run.lease_owner = ""
        run.lease_expires_at = None
        run.save(
            update_fields=[
                "status",
                "error",
                "items_failed",
                "item_errors",
                "finished_at",
                "lease_owner",
                "lease_expires_at",
            ]
        )
        if enqueue:
            _send_on_commit(run)
    return run


def _send_on_commit(run: MachineRun) -> None:
    def send() -> None:
        # Imported here: the tasks bring Celery, which a process that sends none does not load.
        from machines.tasks import machine_run_task

        result = machine_run_task.apply_async(args=[run.pk])
        MachineRun.objects.filter(pk=run.pk).update(task_id=result.id or "")

    transaction.on_commit(send)
