"""A study's life on its pages: closing and reopening it, its activity log.

Thin: the rules are in labeling.services.lifecycle, the reads in labeling.selectors.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.exceptions import ApplicationError
from labeling.access import MANAGER, study_can_see_agreement
from labeling.agreement_report import study_round_statuses
from labeling.models import Round
from labeling.pilot_gate import study_gate_states
from labeling.selectors import study_dimensions, study_event_list
from labeling.services.lifecycle import study_close, study_reopen
from labeling.services.pilot_gate import round_gate_open, round_targets_set
from web.forms import int_or_none
from web.views.studies import study_for_manager, study_or_404


@login_required
@require_POST
def study_status_change(request: HttpRequest, slug: str) -> HttpResponse:
    """Close or reopen the study (the form's `action`), with the reason given."""
    study, _ = study_for_manager(request, slug, "Only the study's managers close or reopen it.")
    change = study_close if request.POST.get("action") == "close" else study_reopen
    try:
        change(study=study, user=request.user, reason=request.POST.get("reason", ""))
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(
            request, "The study is closed." if change is study_close else "The study is open again."
        )
    return redirect("study_overview", slug=study.slug)


@login_required
@require_safe
def study_activity(request: HttpRequest, slug: str) -> HttpResponse:
    """The whole activity log, for the study's managers and adjudicators."""
    study, roles = study_or_404(request, slug)
    if not study_can_see_agreement(roles=roles):
        raise PermissionDenied("The activity log is for the study's managers and adjudicators.")
    context = {
        "study": study,
        "oversees": True,
        "manages": MANAGER in roles,
        "events": study_event_list(study=study, limit=1000),
    }
    return render(request, "web/study_activity.html", context)


def _float_or_none(value: str | None, what: str) -> float | None:
    if value is None or not value.strip():
        return None
    try:
        return float(value)
    except ValueError:
        raise ApplicationError(f"{what}: a target κ is a number between -1 and 1.") from None


@login_required
@require_http_methods(["GET", "POST"])
def study_rounds(request: HttpRequest, slug: str) -> HttpResponse:
    """The rounds' targets and the pilot gate: managers set targets and open a waiting round."""
    study, _ = study_for_manager(request, slug, "Rounds' targets are for the study's managers.")
    required = [d for d in study_dimensions(study=study) if d.required]
    if request.method == "POST":
        round_ = get_object_or_404(Round, study=study, pk=int_or_none(request.POST.get("round")))
        try:
            if request.POST.get("action") == "open":
                round_gate_open(round=round_, user=request.user, reason=request.POST.get("reason"))
                messages.success(request, f"{round_.name} is open.")
            else:
                round_targets_set(
                    round=round_,
                    user=request.user,
                    target_kappa=_float_or_none(request.POST.get("target_kappa"), "The round"),
                    dimension_targets={
                        d.key: _float_or_none(request.POST.get(f"target__{d.key}"), d.name)
                        for d in required
                    },
                )
                messages.success(request, f"The targets of {round_.name} are saved.")
        except ApplicationError as error:
            messages.error(request, error.message)
        return redirect("study_rounds", slug=study.slug)
    rounds = list(study.rounds.order_by("position").select_related("gate_opened_by"))
    statuses = study_round_statuses(study=study)
    gates = {gate.round.pk: gate for gate in study_gate_states(study=study, rounds=rounds)}
    by_round = {status.round.pk: status for status in statuses}
    context = {
        "study": study,
        "oversees": True,
        "manages": True,
        "required": required,
        "rounds": [
            {"round": r, "status": by_round.get(r.pk), "gate": gates.get(r.pk)} for r in rounds
        ],
    }
    return render(request, "web/study_rounds.html", context)
