"""The agreement page of a study and its downloads."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from labeling.access import study_can_see_agreement
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
from web.forms import AgreementFilterForm
from web.views.studies import study_or_404

DOWNLOADS = {
    "csv": (report_csv, "text/csv", "csv"),
    "md": (report_markdown, "text/markdown", "md"),
    "tex": (report_latex, "application/x-tex", "tex"),
}


@login_required
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_or_404(request, slug)
    if not study_can_see_agreement(roles=roles):
        raise PermissionDenied("Agreement is for the study's managers and adjudicators.")
    form = AgreementFilterForm(request.GET or None, study=study)
    status = 200
    if form.is_bound and not form.is_valid():
        # A filter value the study does not have (or too many resamples) is a 400 that says
        # which, not the unfiltered report passed off as the filtered one.
        status = 400
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(errors)}")
        filters = form.default_filters()
    else:
        filters = form.cleaned_filters() if form.is_bound else form.default_filters()
    report = study_agreement_report(
        study=study,
        filters=LabelTableFilter(
            round_name=filters["round"], repository=filters["repository"] or None
        ),
        level=filters["level"],
        bootstrap=form.bootstrap_resamples(filters),
        seed=0,
    )
    download = request.GET.get("download")
    if download in DOWNLOADS and status == 200:
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
    return render(request, "web/agreement.html", context, status=status)
