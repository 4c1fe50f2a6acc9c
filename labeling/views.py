"""Web pages. Each view checks who may see what, calls one selector or service, renders."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from common.exceptions import ApplicationError, ConflictError
from labeling.agreement_report import (
    LabelTableFilter,
    report_rows,
    study_agreement_report,
    study_round_statuses,
)
from labeling.agreement_tables import (
    heatmap_cells,
    report_csv,
    report_latex,
    report_markdown,
    round_chart_bars,
)
from labeling.forms import AgreementFilterForm, answers_from_form, int_or_none
from labeling.models import Membership
from labeling.panels import dimension_rows
from labeling.selectors import (
    QUEUE_FILTERS,
    assignment_get_for_annotator,
    labeling_page,
    queue_for_annotator,
    queue_progress,
    study_get_for_user,
    study_list_for_user,
    study_overview_counts,
)
from labeling.services.annotations import assignment_save, assignment_skip
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import CodebookVersion
from taxonomy.selectors import (
    category_depths,
    codebook_list,
    dimensions_of_version,
    dimensions_with_categories,
)


def _oversees(roles: set[str]) -> bool:
    """Managers and adjudicators see the study's agreement; annotators do not."""
    return bool(roles & {Membership.Role.MANAGER, Membership.Role.ADJUDICATOR})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request, "labeling/home.html", {"studies": study_list_for_user(user=request.user)}
    )


@login_required
def study_overview(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_get_for_user(slug=slug, user=request.user)
    oversees = _oversees(roles)
    context = {
        "study": study,
        "roles": sorted(roles),
        "oversees": oversees,
        "round_statuses": study_round_statuses(study=study) if oversees else [],
        "counts": study_overview_counts(study=study),
        "is_annotator": Membership.Role.ANNOTATOR in roles,
        "progress": queue_progress(study=study, user=request.user),
    }
    return render(request, "labeling/study_overview.html", context)


@login_required
def queue(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_get_for_user(slug=slug, user=request.user)
    status_filter = request.GET.get("status")
    context = {
        "study": study,
        "oversees": _oversees(roles),
        "assignments": queue_for_annotator(
            study=study, user=request.user, status_filter=status_filter
        ),
        "progress": queue_progress(study=study, user=request.user),
        "filters": list(QUEUE_FILTERS),
        "status_filter": status_filter if status_filter in QUEUE_FILTERS else None,
    }
    return render(request, "labeling/queue.html", context)


@login_required
def next_item(request: HttpRequest, slug: str) -> HttpResponse:
    study, _ = study_get_for_user(slug=slug, user=request.user)
    assignment = item_next_for_annotator(study=study, user=request.user)
    if assignment is None:
        messages.info(request, "Nothing left to label in this study. Thank you!")
        return redirect("queue", slug=study.slug)
    return redirect("label_item", slug=study.slug, item_id=assignment.item_id)


@login_required
@require_http_methods(["GET", "POST"])
def label_item(request: HttpRequest, slug: str, item_id: int) -> HttpResponse:
    study, roles = study_get_for_user(slug=slug, user=request.user)
    assignment = assignment_get_for_annotator(study=study, item_id=item_id, user=request.user)
    status = 200
    if request.method == "POST":
        action = request.POST.get("action", "draft")
        answers = answers_from_form(
            request.POST, dimensions_of_version(version=study.codebook_version)
        )
        saving = {
            "assignment": assignment,
            "user": request.user,
            "answers": answers,
            "expected_version": int_or_none(request.POST.get("version")),
            "seconds_spent": int_or_none(request.POST.get("seconds_spent")),
        }
        try:
            if action == "skip":
                assignment_skip(
                    assignment=assignment,
                    user=request.user,
                    reason=request.POST.get("skip_reason", ""),
                )
                messages.info(request, "Skipped.")
                return redirect("next_item", slug=study.slug)
            if action == "submit":
                try:
                    assignment_save(**saving, submit=True)
                except ApplicationError as error:
                    if isinstance(error, ConflictError):
                        raise
                    # Keep what was chosen as a draft, so that fixing the form loses nothing.
                    assignment_save(**saving, submit=False)
                    raise
                messages.success(request, f"Submitted {assignment.item.issue}.")
                return redirect("next_item", slug=study.slug)
            assignment_save(**saving, submit=False)
            messages.success(request, "Draft saved.")
            return redirect("label_item", slug=study.slug, item_id=item_id)
        except ApplicationError as error:
            messages.error(request, error.message)
            status = 409 if isinstance(error, ConflictError) else 400
        assignment = assignment_get_for_annotator(study=study, item_id=item_id, user=request.user)
    page = labeling_page(assignment=assignment, study=study)
    return render(
        request,
        "labeling/label_item.html",
        {
            "study": study,
            "oversees": _oversees(roles),
            "page": page,
            "dimension_rows": dimension_rows(
                page, content_hash=study.codebook_version.content_hash
            ),
            "facets": page.issue.facets or {},
        },
        status=status,
    )


@login_required
@require_POST
def label_item_autosave(request: HttpRequest, slug: str, item_id: int) -> JsonResponse:
    """The labeling page's background draft save: JSON in the API's error shape."""
    study, _ = study_get_for_user(slug=slug, user=request.user)
    assignment = assignment_get_for_annotator(study=study, item_id=item_id, user=request.user)
    dimensions = dimensions_of_version(version=study.codebook_version)
    try:
        assignment = assignment_save(
            assignment=assignment,
            user=request.user,
            answers=answers_from_form(request.POST, dimensions),
            submit=False,
            expected_version=int_or_none(request.POST.get("version")),
            seconds_spent=int_or_none(request.POST.get("seconds_spent")),
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


DOWNLOADS = {
    "csv": (report_csv, "text/csv", "csv"),
    "md": (report_markdown, "text/markdown", "md"),
    "tex": (report_latex, "application/x-tex", "tex"),
}


@login_required
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_get_for_user(slug=slug, user=request.user)
    if not _oversees(roles):
        raise PermissionDenied("Agreement is for the study's managers and adjudicators.")
    form = AgreementFilterForm(request.GET or None, study=study)
    filters = form.cleaned_filters() if form.is_valid() else form.default_filters()
    report = study_agreement_report(
        study=study,
        filters=LabelTableFilter(
            round_name=filters["round"], repository=filters["repository"] or None
        ),
        level=filters["level"],
        bootstrap=1000 if filters["intervals"] else 0,
        seed=0,
    )
    download = request.GET.get("download")
    if download in DOWNLOADS:
        render_table, content_type, extension = DOWNLOADS[download]
        response = HttpResponse(render_table(report), content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = (
            f'attachment; filename="{study.slug}-agreement.{extension}"'
        )
        return response

    dimension_key = filters["dimension"] or next(
        (key for key, d in report["dimensions"].items() if d["n_items"]),
        next(iter(report["dimensions"]), None),
    )
    selected = report["dimensions"].get(dimension_key)
    pairs = selected["cohen_kappa"]["pairs"] if selected else []
    pair = next((p for p in pairs if p["kappa"] is not None), pairs[0] if pairs else None)
    statuses = study_round_statuses(study=study)
    context = {
        "study": study,
        "oversees": True,
        "form": form,
        "rows": report_rows(report),
        "dimension_key": dimension_key,
        "selected": selected,
        "pairs": pairs,
        "per_category": sorted(
            (selected or {}).get("per_category", {}).items(),
            key=lambda entry: -entry[1]["support"],
        ),
        "pair": pair,
        "heatmap": heatmap_cells(pair["confusion"])
        if pair and "matrix" in pair["confusion"]
        else None,
        "round_statuses": statuses,
        "round_bars": round_chart_bars(
            [(s.round.name, s.kappa_by_dimension.get(dimension_key)) for s in statuses]
        ),
        "query": request.GET.urlencode(),
    }
    return render(request, "labeling/agreement.html", context)


@login_required
def codebooks(request: HttpRequest) -> HttpResponse:
    """Every codebook with its versions; a version's page is the codebook at hand."""
    return render(request, "labeling/codebooks.html", {"codebooks": codebook_list()})


@login_required
def codebook_version(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=version_id)
    dimensions = dimensions_with_categories(version_id=version.id)
    for dimension in dimensions:
        depth = category_depths(dimension.categories.all())
        for category in dimension.categories.all():
            category.depth = depth[category.id]
    return render(
        request, "labeling/codebook_version.html", {"version": version, "dimensions": dimensions}
    )
