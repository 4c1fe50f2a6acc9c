"""Resolving disagreements: the queue, the adjudication page of an item, and the discussion.

The queue and the adjudication page are for a study's managers and adjudicators
(labeling.access); the discussion also takes the annotators of an item once they submitted it.
"""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from corpus.selectors import issue_thread
from labeling.access import (
    assignment_get_for_annotator,
    item_can_resolve,
    item_get_for_resolution,
)
from labeling.agreement_report import LabelTableFilter, agreement_query_check
from labeling.disagreements import (
    DisagreementFilter,
    disagreement_list,
    disagreement_queue,
    item_relabeling,
    item_resolution_view,
)
from labeling.models import Resolution, Study, StudyItem
from labeling.resolution_rules import DimensionState
from labeling.services.resolutions import (
    discussion_comment_add,
    item_tiebreaker_request,
    resolution_decide,
)
from labeling.services.upstream_changes import item_upstream_review
from taxonomy.models import Category
from taxonomy.selectors import category_depths, dimensions_of_version
from web.forms import int_or_none
from web.views.studies import study_or_404

# The queue's filters: the query parameter and the DisagreementFilter field it sets.
QUEUE_FILTERS = {
    "dimension": "dimension",
    "conflict": "conflict",
    "round": "round_name",
    "repository": "repository",
}
DECISION_METHOD_CHOICES = [
    (Resolution.Method.ADJUDICATED, Resolution.Method.ADJUDICATED.label),
    (Resolution.Method.DISCUSSION, Resolution.Method.DISCUSSION.label),
    (Resolution.Method.MAJORITY, Resolution.Method.MAJORITY.label),
]
STATE_WORDS = {
    DimensionState.RESOLVED: "resolved",
    DimensionState.OPEN: "disagreement",
    DimensionState.WAITING: "waiting for an earlier dimension",
    DimensionState.NOT_APPLICABLE: "does not apply",
    DimensionState.CONSENSUS: "consensus (not recorded yet)",
    DimensionState.MAJORITY: "majority (not recorded yet)",
    DimensionState.RELABELING: "being labeled by annotators who have not seen the item",
}


def _overseer_study_or_403(request: HttpRequest, slug: str) -> tuple[Study, set[str]]:
    study, roles = study_or_404(request, slug)
    if not item_can_resolve(roles=roles):
        raise PermissionDenied("Disagreements are for the study's managers and adjudicators.")
    return study, roles


def _queue_filters(query: QueryDict) -> DisagreementFilter:
    return DisagreementFilter(
        **{field: (query.get(name) or None) for name, field in QUEUE_FILTERS.items()}
    )


def _queue_filters_check(study: Study, query: QueryDict) -> None:
    """The API's check of the queue's filters: a dimension, round or repository the study does
    not have is an ApplicationError naming it."""
    dimension = query.get("dimension") or None
    agreement_query_check(
        study=study,
        dimension_keys=[dimension] if dimension else None,
        filters=LabelTableFilter(
            round_name=query.get("round") or None, repository=query.get("repository") or None
        ),
    )


def _queue_query(query: QueryDict) -> str:
    """The queue's filters of a request as a query string (to come back to the same queue)."""
    return urlencode({name: query[name] for name in QUEUE_FILTERS if query.get(name)})


def _category_names(study: Study) -> dict[str, dict[str, str]]:
    """dimension key -> category key -> name, in one query."""
    names: dict[str, dict[str, str]] = {}
    for dimension_key, key, name in Category.objects.filter(
        dimension__version_id=study.codebook_version_id
    ).values_list("dimension__key", "key", "name"):
        names.setdefault(dimension_key, {})[key] = name
    return names


def _answer_text(answer: frozenset[str] | None, names: dict[str, str]) -> str:
    if answer is None:
        return "does not apply"
    if not answer:
        return "none applies"
    return ", ".join(sorted(names.get(key, key) for key in answer))


def _names(keys: list[str], names: dict[str, str]) -> str:
    return ", ".join(names.get(key, key) for key in keys) or "none applies"


def _conflict_text(conflict: str, names: dict[str, str]) -> str:
    """ "api_misuse vs configuration_error" in category names."""
    words = {"none": "none applies", "n/a": "does not apply"}
    return " vs ".join(
        " + ".join(words.get(key) or names.get(key, key) for key in side.split("+"))
        for side in conflict.split(" vs ")
    )


@login_required
@require_safe
def disagreements(request: HttpRequest, slug: str) -> HttpResponse:
    study, _ = _overseer_study_or_403(request, slug)
    given = request.GET
    status = 200
    try:
        _queue_filters_check(study, given)
    except ApplicationError as error:
        # A filter value the study does not have is a 400 that says which, as on the agreement
        # page and in the API, not an empty queue passed off as "no open disagreements".
        status = 400
        for name, problems in error.extra.items() or [(None, [error.message])]:
            messages.error(request, f"{name}: {' '.join(problems)}" if name else problems[0])
        given = QueryDict()
    filters = _queue_filters(given)
    rows, counts = disagreement_queue(study=study, filters=filters)
    names = _category_names(study)
    dimension_names = {d.key: d.name for d in dimensions_of_version(version=study.codebook_version)}

    def choices(name: str, text) -> list[dict]:
        selected = given.get(name) or ""
        found = [
            {"value": value, "text": text(value), "count": count, "selected": value == selected}
            for value, count in counts[name].items()
        ]
        if selected and selected not in counts[name]:
            found.append({"value": selected, "text": text(selected), "count": 0, "selected": True})
        return found

    def conflict_text(value: str) -> str:
        if filters.dimension:
            return _conflict_text(value, names.get(filters.dimension, {}))
        merged = {key: name for by_key in names.values() for key, name in by_key.items()}
        return _conflict_text(value, merged)

    query = _queue_query(given)
    context = {
        "study": study,
        "oversees": True,
        "filters": [
            {
                "name": "dimension",
                "label": "Dimension",
                "all": "all dimensions",
                "choices": choices("dimension", lambda key: dimension_names.get(key, key)),
            },
            {
                "name": "conflict",
                "label": "Conflict",
                "all": "all conflicts",
                "choices": choices("conflict", conflict_text),
            },
            {
                "name": "round",
                "label": "Round",
                "all": "all rounds",
                "choices": choices("round", str),
            },
            {
                "name": "repository",
                "label": "Repository",
                "all": "all repositories",
                "choices": choices("repository", str),
            },
        ],
        "rows": [
            {
                "item": row.item,
                "issue": row.item.issue,
                "round": row.round_name,
                "dimension": row.dimension,
                "conflict": _conflict_text(row.conflict, names.get(row.dimension.key, {})),
                "answers": [
                    (annotator, _answer_text(answer, names.get(row.dimension.key, {})))
                    for annotator, answer in row.answers.items()
                ],
                "resolve_url": _resolve_url(study, row.item.id, query, row.dimension.key),
            }
            for row in rows
        ],
        "filtered": any(given.get(name) for name in QUEUE_FILTERS),
    }
    return render(request, "web/disagreements.html", context, status=status)


def _resolve_url(study: Study, item_id: int, query: str, dimension_key: str = "") -> str:
    url = reverse("item_resolve", args=[study.slug, item_id])
    if query:
        url += f"?{query}"
    if dimension_key:
        url += f"#dimension-{dimension_key}"
    return url


def _item_for_resolution(
    request: HttpRequest, slug: str, item_id: int
) -> tuple[Study, set[str], StudyItem]:
    study, roles = study_or_404(request, slug)
    item = item_get_for_resolution(study=study, roles=roles, item_id=item_id)
    if item is None:
        raise Http404("No such item to resolve.")
    return study, roles, item


@login_required
@require_http_methods(["GET", "POST"])
def item_resolve(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    study, roles, item = _item_for_resolution(request, slug, item_id)
    query = QueryDict(request.POST.get("queue", "")) if request.method == "POST" else request.GET
    status = 200
    entered: dict[str, dict] = {}
    conflict_dimension = None
    if request.method == "POST":
        action = request.POST.get("action")
        if action == "decide":
            dimension_key = request.POST.get("dimension", "")
            category_keys = [key for key in request.POST.getlist("categories") if key]
            try:
                resolution_decide(
                    item=item,
                    dimension_key=dimension_key,
                    user=request.user,
                    category_keys=category_keys,
                    method=request.POST.get("method", ""),
                    note=request.POST.get("note", ""),
                    expected_version=int_or_none(request.POST.get("version")),
                )
            except PermissionDeniedError as error:
                raise PermissionDenied(error.message) from error
            except ApplicationError as error:
                # Keep what the user entered, so that nothing is lost on a conflict or a mistake.
                entered[dimension_key] = {
                    "categories": set(category_keys),
                    "method": request.POST.get("method", ""),
                    "note": request.POST.get("note", ""),
                }
                if isinstance(error, ConflictError):
                    conflict_dimension = dimension_key
                    messages.error(
                        request,
                        f"{error.message} Your choice is kept below: save it again to replace "
                        "that decision.",
                    )
                    status = 409
                else:
                    messages.error(request, error.message)
                    status = 400
            else:
                return _after_decision(request, study, item, dimension_key, query)
        elif action == "tiebreaker":
            username = request.POST.get("annotator") or None
            annotator = None
            if username:
                annotator = get_user_model().objects.filter(username=username).first()
                if annotator is None:
                    messages.error(request, f"No annotator {username!r}.")
                    status = 400
            if status == 200:
                try:
                    assignment = item_tiebreaker_request(
                        item=item, user=request.user, annotator=annotator
                    )
                except PermissionDeniedError as error:
                    raise PermissionDenied(error.message) from error
                except ApplicationError as error:
                    messages.error(request, error.message)
                    status = 400
                else:
                    messages.success(
                        request,
                        f"Asked {assignment.annotator.get_username()} to label this item as a "
                        "tie-breaker.",
                    )
                    return redirect(_resolve_url(study, item.id, _queue_query(query)))
        else:
            messages.error(request, "Unknown action.")
            status = 400
        # The item as it is now (a failed decision may have met someone else's).
        item = item_get_for_resolution(study=study, roles=roles, item_id=item.id)
    return render(
        request,
        "web/item_resolve.html",
        _resolve_context(request, study, item, query, entered, conflict_dimension),
        status=status,
    )


def _after_decision(
    request: HttpRequest, study: Study, item: StudyItem, dimension_key: str, query: QueryDict
) -> HttpResponse:
    """The next open disagreement of the queue: this item's next one, else the next item's, else
    the queue."""
    rows = disagreement_list(study=study, filters=_queue_filters(query))
    queue_query = _queue_query(query)
    item.refresh_from_db(fields=["status"])
    dimensions = dimensions_of_version(version=study.codebook_version)
    name = next((d.name for d in dimensions if d.key == dimension_key), dimension_key)
    done = f"Saved the gold label of {name} for {item.issue}."
    if item.status == StudyItem.Status.RESOLVED:
        done = f"Saved the gold label of {name}: {item.issue} is resolved."
    relabeling = item_relabeling(item=item)
    if relabeling:
        asked = {key for assignment in relabeling for key in assignment.dimension_keys}
        done += (
            f" {', '.join(d.name for d in dimensions if d.key in asked)} now apply: "
            f"{' and '.join(a.annotator.get_username() for a in relabeling)}, who have not seen "
            "the item, label them blind."
        )
    same = next((row for row in rows if row.item.id == item.id), None)
    following = same or next(
        (row for row in rows if row.item.id > item.id), rows[0] if rows else None
    )
    if following is None:
        messages.success(request, f"{done} No open disagreements left.")
        url = reverse("disagreements", args=[study.slug])
        return redirect(f"{url}?{queue_query}" if queue_query else url)
    messages.success(request, f"{done} Next: {following.dimension.name} of {following.item.issue}.")
    return redirect(_resolve_url(study, following.item.id, queue_query, following.dimension.key))


def _resolve_context(
    request: HttpRequest,
    study: Study,
    item: StudyItem,
    query: QueryDict,
    entered: dict[str, dict],
    conflict_dimension: str | None,
) -> dict:
    view = item_resolution_view(item=item)
    issue = item.issue
    # Depths for the indented category trees of the decision forms (one query, all dimensions).
    depths = category_depths(
        Category.objects.filter(dimension__version_id=study.codebook_version_id).order_by(
            "dimension__position", "position"
        )
    )
    can_decide = item.status != StudyItem.Status.OPEN
    methods = dict(Resolution.Method.choices)
    rows = []
    for row in view.rows:
        mine = entered.get(row.dimension.key)
        gold_keys = {c.key for c in row.resolution.categories.all()} if row.resolution else set()
        chosen = mine["categories"] if mine else gold_keys
        chosen_by: dict[int, list[str]] = {}
        for column in row.columns:
            for category in column.categories:
                chosen_by.setdefault(category.id, []).append(column.annotator)
        names = {category.key: category.name for category in row.choices}
        decidable = can_decide and row.state in (DimensionState.OPEN, DimensionState.RESOLVED)
        rows.append(
            {
                "row": row,
                "dimension": row.dimension,
                "state": row.state.value,
                "state_text": STATE_WORDS.get(row.state, row.state.value),
                "decidable": decidable,
                "open": row.state == DimensionState.OPEN or row.dimension.key in entered,
                "conflict": row.dimension.key == conflict_dimension,
                "method": (mine or {}).get("method")
                or (
                    row.resolution.method
                    if row.resolution and row.resolution.method != Resolution.Method.CONSENSUS
                    else Resolution.Method.ADJUDICATED
                ),
                "note": (mine or {}).get("note", row.resolution.note if row.resolution else ""),
                "version": row.resolution.version if row.resolution else 0,
                "history": [
                    {
                        "revision": revision,
                        "before": None
                        if revision.previous_category_keys is None
                        else _names(revision.previous_category_keys, names),
                        "after": _names(revision.category_keys, names),
                        "method": methods.get(revision.method, revision.method),
                        "previous_method": methods.get(
                            revision.previous_method, revision.previous_method
                        ),
                    }
                    for revision in row.revisions
                ],
                "choices": [
                    {
                        "category": category,
                        "depth": depths.get(category.id, 0),
                        "checked": category.key in chosen,
                        "chosen_by": chosen_by.get(category.id, []),
                    }
                    for category in row.choices
                ],
                "none_choice": not row.dimension.multi_label and not row.dimension.required,
                "none_checked": bool(row.resolution or mine) and not chosen,
            }
        )
    return {
        "study": study,
        "oversees": True,
        "item": item,
        "issue": issue,
        "facets": issue.facets or {},
        **vars(issue_thread(issue=issue)),
        "view": view,
        "rows": rows,
        "open_rows": [r for r in rows if r["state"] == DimensionState.OPEN],
        "methods": DECISION_METHOD_CHOICES,
        "queue_query": _queue_query(query),
        "can_request_tiebreaker": item.status == StudyItem.Status.IN_RESOLUTION,
    }


@login_required
@require_POST
def item_discussion(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """Post to an item's discussion, from the adjudication page or an annotator's item page."""
    study, roles = study_or_404(request, slug)
    item = item_get_for_resolution(study=study, roles=roles, item_id=item_id)
    back = None
    if item is not None:
        back = reverse("item_resolve", args=[study.slug, item_id])
        queue_query = _queue_query(QueryDict(request.POST.get("queue", "")))
        if queue_query:
            back += f"?{queue_query}"
    else:
        assignment = assignment_get_for_annotator(study=study, item_id=item_id, user=request.user)
        if assignment is None:
            raise Http404("No such item.")
        item = assignment.item
        back = reverse("label_item", args=[study.slug, item_id])
    try:
        discussion_comment_add(item=item, user=request.user, body=request.POST.get("body", ""))
    except PermissionDeniedError as error:
        raise PermissionDenied(error.message) from error
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, "Added to the discussion.")
    return redirect(f"{back}#discussion")


@login_required
@require_POST
def upstream_review(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    """A manager looked at what changed on GitHub in an item's issue: the labels still hold."""
    study, _, item = _item_for_resolution(request, slug, item_id)
    try:
        item_upstream_review(item=item, user=request.user, note=request.POST.get("note", ""))
    except PermissionDeniedError as error:
        raise PermissionDenied(error.message) from error
    except ApplicationError as error:
        messages.error(request, error.message)
    else:
        messages.success(request, f"Reviewed the change of {item.issue}: the labels still hold.")
    queue_query = _queue_query(QueryDict(request.POST.get("queue", "")))
    return redirect(_resolve_url(study, item.id, queue_query))
