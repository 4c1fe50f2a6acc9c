"""The machine annotators page of a study (/studies/{slug}/machines/) and a run's page: the
study's machine annotators (any kind) and their runs, adding an LLM annotator and starting a
run, resuming a stopped one, and a run's record with its progress (htmx polls it while the run
is queued or running). For the study's managers only; what each action does is decided in
machines.services.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_safe

from common.exceptions import ApplicationError
from labeling.models import Study
from machines.models import MachineAnnotator, MachineRun
from machines.seats import SeatChange, study_machine_rater_set
from machines.selectors import study_machine_annotators, study_machine_runs
from machines.services import (
    classical_run_request,
    machine_annotator_get_or_create,
    machine_run_is_resumable,
    machine_run_request,
    machine_run_resume,
)
from web.forms import MachineAnnotatorForm
from web.views.studies import study_for_manager

RECENT_RUNS = 50

MACHINES_REFUSAL = "Machine annotators are for the study's managers."


def _nav(study: Study, roles: set[str]) -> dict:
    return {"study": study, "oversees": True, "manages": True, "is_annotator": "annotator" in roles}


# Not one transaction per request: a run requested here commits at once, so that its task
# (inline in the embedded default) sees it; every write is a service with its own transaction.
@transaction.non_atomic_requests
@login_required
@require_http_methods(["GET", "POST"])
def study_machines(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the page. POST: add an LLM annotator and start its first run (`action=add`),
    start another run of an annotator (`action=run`, `annotator=ID`), run the scikit-learn
    annotator (`action=classical`) or resume a stopped run
    (`action=resume`, `run=ID`)."""
    study, roles = study_for_manager(request, slug, MACHINES_REFUSAL)
    form = MachineAnnotatorForm()
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "add":
            form = MachineAnnotatorForm(request.POST)
            if form.is_valid():
                try:
                    annotator, _ = machine_annotator_get_or_create(
                        study=study, user=request.user, **form.cleaned_data
                    )
                except ApplicationError as error:
                    for field, errors in error.extra.items():
                        form.add_error(field if field in form.fields else None, errors)
                    if not error.extra:
                        form.add_error(None, error.message)
                else:
                    run = machine_run_request(annotator=annotator)
                    messages.success(request, f"Run {run.pk} of {annotator.name} requested.")
                    return redirect("machine_run", slug=study.slug, run_id=run.pk)
            return _page(request, study, roles, form, status=400)
        if action == "run":
            annotator = _annotator_or_404(study, request.POST.get("annotator", ""))
            if annotator.kind != MachineAnnotator.Kind.LLM:
                return HttpResponse("Only a language model's run starts here.", status=400)
            run = machine_run_request(annotator=annotator)
            messages.success(request, f"Run {run.pk} of {annotator.name} requested.")
            return redirect("machine_run", slug=study.slug, run_id=run.pk)
        if action == "classical":
            try:
                run = classical_run_request(study=study, user=request.user)
            except ApplicationError as error:
                messages.error(request, error.message)
                return redirect("study_machines", slug=study.slug)
            messages.success(request, f"Run {run.pk} of the scikit-learn annotator requested.")
            return redirect("machine_run", slug=study.slug, run_id=run.pk)
        if action == "rater":
            chosen = request.POST.get("annotator", "")
            annotator = _annotator_or_404(study, chosen) if chosen else None
            try:
                change = study_machine_rater_set(study=study, annotator=annotator, by=request.user)
            except ApplicationError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, _rater_message(annotator, change))
            return redirect("study_machines", slug=study.slug)
        if action == "resume":
            run = _run_or_404(study, request.POST.get("run", ""))
            try:
                machine_run_resume(run=run)
            except ApplicationError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, f"Run {run.pk} resumed.")
            return redirect("machine_run", slug=study.slug, run_id=run.pk)
        return HttpResponse("Unknown action.", status=400)
    return _page(request, study, roles, form)


def _rater_message(annotator: MachineAnnotator | None, change: SeatChange) -> str:
    given_back = (
        f" {change.given_back} unfilled seats given back to people." if change.given_back else ""
    )
    if annotator is None:
        return "No machine counts as a rater: all are reported apart." + given_back
    return (
        f"{annotator.name} now counts as one of the k raters: it took {change.taken} seats "
        f"({change.withdrawn} from people who had not opened the item) and filled "
        f"{change.filled} with its latest labels.{given_back}"
    )


def _page(
    request: HttpRequest, study: Study, roles: set[str], form, *, status: int = 200
) -> HttpResponse:
    runs = list(study_machine_runs(study=study)[:RECENT_RUNS])
    annotators = list(study_machine_annotators(study=study))
    context = {
        **_nav(study, roles),
        "annotators": annotators,
        "replacing": next((a for a in annotators if a.counts_toward_k), None),
        "runs": [{"run": run, "resumable": machine_run_is_resumable(run)} for run in runs],
        "form": form,
    }
    return render(request, "web/machines.html", context, status=status)


def _annotator_or_404(study: Study, annotator_id: str) -> MachineAnnotator:
    found = study_machine_annotators(study=study).filter(pk=_int(annotator_id)).first()
    if found is None:
        raise Http404("No such machine annotator.")
    return found


def _run_or_404(study: Study, run_id: str | int) -> MachineRun:
    found = study_machine_runs(study=study).filter(pk=_int(run_id)).first()
    if found is None:
        raise Http404("No such run.")
    return found


def _int(value: str | int) -> int:
    text = str(value)
    return int(text) if text.isdigit() and len(text) < 18 else 0


@login_required
@require_safe
def machine_run(request: HttpRequest, slug: str, run_id: int) -> HttpResponse:
    """A run's record and progress; with `?progress=1` (htmx) its progress alone, and once the
    run has ended, a refresh of the whole page so that its record shows complete."""
    study, roles = study_for_manager(request, slug, MACHINES_REFUSAL)
    run = _run_or_404(study, run_id)
    context = {
        **_nav(study, roles),
        "run": run,
        "annotator": run.annotator,
        "resumable": machine_run_is_resumable(run),
    }
    if request.GET.get("progress"):
        response = render(request, "web/_machine_run_progress.html", context)
        if request.htmx and run.status not in (MachineRun.Status.QUEUED, MachineRun.Status.RUNNING):
            response["HX-Refresh"] = "true"
        return response
    return render(request, "web/machine_run.html", context)
