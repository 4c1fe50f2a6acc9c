"""Pages of a study for its members: my studies, the overview, my queue, the labeling page.

Each view checks who may see what, calls one selector or service, renders.
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.exceptions import ApplicationError, ConflictError
from labeling.access import (
    MANAGER,
    assignment_get_for_annotator,
    assignment_get_in_study,
    item_can_discuss,
    study_can_label,
    study_can_see_agreement,
    study_get_visible_to,
    study_roles,
    user_can_create_study,
)
from labeling.agreement_report import (
    study_round_statuses,
)
from labeling.dashboard import (
    FUNNEL_STEPS,
    study_annotator_progress,
    study_changed_upstream,
    study_funnel,
    study_round_progress,
)
from labeling.disagreements import discussion_of, item_gold_list
from labeling.models import Assignment, Study, StudyItem
from labeling.pilot_gate import study_gate_states, study_round_ids_held_back
from labeling.rereview import assignment_has_recheck
from labeling.selectors import (
    QUEUE_FILTERS,
    assignment_held_next,
    assignment_held_next_ungated,
    labeling_page,
    queue_for_annotator,
    queue_progress,
    study_event_list,
    study_list_for_user,
    study_overview_counts,
)
from labeling.services.annotations import assignment_save, assignment_skip
from labeling.services.studies import item_next_for_annotator
from machines.similar_panel import item_similar_issues
from taxonomy.selectors import (
    dimensions_of_version,
)
from web.forms import answers_from_form, int_or_none
from web.panels import dimension_fieldsets
from web.sampling_words import sampling_in_words


def study_or_404(request: HttpRequest, slug: str) -> tuple[Study, set[str]]:
    """The study and the user's roles (labeling.access); 404 for a study they may not see, so
    that slugs don't leak."""
    found = study_get_visible_to(slug=slug, user=request.user)
    if found is None:
        raise Http404("No such study.")
    return found


def study_for_manager(request: HttpRequest, slug: str, refusal: str) -> tuple[Study, set[str]]:
    """`study_or_404` for a page or action of the study's managers: a 403 saying `refusal` to
    its other members."""
    study, roles = study_or_404(request, slug)
    if MANAGER not in roles:
        raise PermissionDenied(refusal)
    return study, roles


def _assignment_or_404(
    request: HttpRequest, study: Study, item_id: int, *, with_issue: bool = True, lock: bool = False
) -> Assignment:
    assignment = assignment_get_for_annotator(
        study=study, item_id=item_id, user=request.user, with_issue=with_issue, lock=lock
    )
    if assignment is None:
        raise Http404("This item is not in your queue.")
    return assignment


def _study_assignment_or_404(
    request: HttpRequest, slug: str, item_id: int, *, with_issue: bool = True, lock: bool = False
) -> tuple[Study, set[str], Assignment]:
    """`study_or_404`, then `_assignment_or_404`, in one query when both are found."""
    assignment = assignment_get_in_study(
        slug=slug, item_id=item_id, user=request.user, with_issue=with_issue, lock=lock
    )
    if assignment is None:
        study_or_404(request, slug)  # a study they may not see is a 404 of its own
        raise Http404("This item is not in your queue.")
    study = assignment.item.study
    return study, study_roles(study=study, user=request.user), assignment


@login_required
@require_safe
def home(request: HttpRequest) -> HttpResponse:
    studies = [
        {
            "study": study,
            "can_label": study_can_label(roles=study_roles(study=study, user=request.user)),
        }
        for study in study_list_for_user(user=request.user)
    ]
    context = {"studies": studies, "can_create": user_can_create_study(user=request.user)}
    return render(request, "web/home.html", context)


@login_required
@require_safe
def study_overview(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_or_404(request, slug)
    oversees = study_can_see_agreement(roles=roles)
    is_annotator = study_can_label(roles=roles)
    context = {
        "study": study,
        "roles": sorted(roles),
        "oversees": oversees,
        "manages": MANAGER in roles,
        "is_annotator": is_annotator,
        "counts": study_overview_counts(study=study),
        "progress": queue_progress(study=study, user=request.user) if is_annotator else None,
    }
    if oversees:
        # The dashboard: for those who run the study. Annotators keep to their own queue.
        rounds = study_round_progress(study=study)
        round_statuses = study_round_statuses(study=study)
        statuses = {status.round.name: status for status in round_statuses}
        for round_ in rounds:
            round_["status"] = statuses.get(round_["name"])
            round_["percent"] = (
                round(100 * round_["labeled"] / round_["n_items"]) if round_["n_items"] else 0
            )
        context |= {
            "funnel": study_funnel(study=study),
            "funnel_steps": FUNNEL_STEPS,
            "annotator_progress": study_annotator_progress(study=study),
            "round_progress": rounds,
            "changed_upstream": study_changed_upstream(study=study),
            "sampling_words": sampling_in_words(study.sampling),
            "recent_events": study_event_list(study=study, limit=10),
            "gates": study_gate_states(study=study, statuses=round_statuses),
        }
    return render(request, "web/study_overview.html", context)


QUEUE_PAGE_SIZE = 100


@login_required
@require_safe
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_or_404(request, slug)
    status_filter = request.GET.get("status")
    assignments = queue_for_annotator(
        study=study,
        user=request.user,
        status_filter=status_filter,
        held_back=study_round_ids_held_back(study=study),
    )
    # A page of QUEUE_PAGE_SIZE: an annotator may hold thousands of items.
    page = Paginator(assignments, QUEUE_PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "study": study,
        "oversees": study_can_see_agreement(roles=roles),
        "manages": MANAGER in roles,
        "assignments": page,
        "page": page,
        "progress": queue_progress(study=study, user=request.user),
        "filters": list(QUEUE_FILTERS),
        "status_filter": status_filter if status_filter in QUEUE_FILTERS else None,
    }
    return render(request, "web/queue.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def next_item(request: HttpRequest, slug: str) -> HttpResponse:
    """GET opens an item the annotator already holds, else shows the button that claims one;
    claiming is a POST, so that no link on another site can make someone claim an item."""
    study, roles = study_or_404(request, slug)
    if not study_can_label(roles=roles):
        messages.info(request, "You do not label in this study: only its annotators get items.")
        return redirect("study_overview", slug=study.slug)
    if request.method == "POST":
        return _open_next(request, study)
    held_next = assignment_held_next_ungated(study=study, user=request.user)
    held = held_next.assignment
    if held_next.gate_may_wait:
        held_back = study_round_ids_held_back(study=study)
        held = assignment_held_next(study=study, user=request.user, held_back=held_back)
    if held is not None:
        return redirect("label_item", slug=study.slug, item_id=held.item_id)
    context = {"study": study, "oversees": study_can_see_agreement(roles=roles)}
    return render(request, "web/next_item.html", context)


def _open_next(request: HttpRequest, study: Study) -> HttpResponse:
    """Claim the next item (only in a POST) and open it."""
    assignment = item_next_for_annotator(study=study, user=request.user)
    if assignment is None:
        messages.info(request, "Nothing left to label in this study. Thank you!")
        return redirect("queue", slug=study.slug)
    return redirect("label_item", slug=study.slug, item_id=assignment.item_id)


LABEL_ACTIONS = ("draft", "submit", "skip")


def _form_count(data, name: str) -> int | None:
    """A whole number of the form, as the API reads it: absent is None, anything else not a
    count is an error (a version that is not a number must not skip the version check)."""
    value = data.get(name, "")
    if value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise ApplicationError(f"The form's {name} is not a whole number; reload the page.")
    return number


@login_required
@require_http_methods(["GET", "POST"])
def label_item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    # A POST writes the assignment: read it once, locked, and the service does not read it again.
    study, roles, assignment = _study_assignment_or_404(
        request, slug, item_id, lock=request.method == "POST"
    )
    status = 200
    if request.method == "POST":
        action = request.POST.get("action") or "draft"  # Enter in a text field sends no button
        try:
            if action not in LABEL_ACTIONS:
                raise ApplicationError(f"Unknown action {action[:40]!r}; reload the page.")
            if action == "skip":
                assignment_skip(
                    assignment=assignment,
                    user=request.user,
                    reason=request.POST.get("skip_reason", ""),
                    locked=True,
                )
                messages.info(request, "Skipped.")
                return _open_next(request, study)
            assignment_save(
                assignment=assignment,
                user=request.user,
                answers=answers_from_form(
                    request.POST, dimensions_of_version(version=study.codebook_version)
                ),
                submit=action == "submit",
                expected_version=_form_count(request.POST, "version"),
                seconds_spent=_form_count(request.POST, "seconds_spent"),
                locked=True,
            )
            if action == "submit":
                messages.success(request, f"Submitted {assignment.item.issue}.")
                return _open_next(request, study)
            messages.success(request, "Draft saved.")
            return redirect("label_item", slug=study.slug, item_id=item_id)
        except ApplicationError as error:
            # A submit that lacks a category kept the choices as a draft (the service's rule).
            messages.error(request, error.message)
            status = 409 if isinstance(error, ConflictError) else 400
        assignment = _assignment_or_404(request, study, item_id)
    page = labeling_page(assignment=assignment, study=study)
    # Submitted labels of an item in resolution no longer change: the form is read-only,
    # unless a codebook change flagged some of them for re-checking.
    locked = (
        assignment.status == Assignment.Status.SUBMITTED
        and assignment.item.status != StudyItem.Status.OPEN
        and not assignment_has_recheck(assignment=assignment, annotations=page.annotations.values())
    )
    return render(
        request,
        "web/label_item.html",
        {
            "study": study,
            "oversees": study_can_see_agreement(roles=roles),
            "page": page,
            "fieldsets": dimension_fieldsets(page, version=study.codebook_version, locked=locked),
            "facets": page.issue.facets or {},
            "outcome": _outcome(request, study, assignment),
            "locked": locked,
            "similar": item_similar_issues(study=study, item=assignment.item, user=request.user),
        },
        status=status,
    )


def _outcome(request: HttpRequest, study: Study, assignment: Assignment) -> dict | None:
    """What an annotator sees of an item's resolution: the gold labels and the discussion, once
    they submitted their own labels (never before: labeling is blind) and there is something to
    see or the item went to resolution."""
    item = assignment.item
    if assignment.status != Assignment.Status.SUBMITTED or not item_can_discuss(
        item=item, user=request.user, assignment=assignment
    ):
        return None
    gold = item_gold_list(item=item, version=study.codebook_version)
    discussion = discussion_of(item=item)
    if not gold and not discussion and item.status == StudyItem.Status.OPEN:
        return None
    return {"item": item, "gold": gold, "discussion": discussion}


@login_required
@require_POST
def label_item_autosave(request: HttpRequest, slug: str, item_id: int) -> JsonResponse:
    """The labeling page's background draft save: JSON in the API's error shape."""
    study, _, assignment = _study_assignment_or_404(
        request, slug, item_id, with_issue=False, lock=True
    )
    dimensions = dimensions_of_version(version=study.codebook_version)
    try:
        assignment = assignment_save(
            assignment=assignment,
            user=request.user,
            answers=answers_from_form(request.POST, dimensions),
            submit=False,
            expected_version=int_or_none(request.POST.get("version")),
            seconds_spent=int_or_none(request.POST.get("seconds_spent")),
            locked=True,
        )
    except ApplicationError as error:
        code = "conflict" if isinstance(error, ConflictError) else "invalid"
        return JsonResponse(
            {"error": {"code": code, "message": error.message, "details": error.extra}},
            status=409 if isinstance(error, ConflictError) else 400,
        )
    return JsonResponse(
        {
            "version": assignment.version,
            "status": assignment.status,
            "seconds_spent": assignment.seconds_spent,
        }
    )
