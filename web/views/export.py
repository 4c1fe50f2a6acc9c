"""The export page of a study (/studies/{slug}/export/), for its managers: download the dataset
at once (CSV and JSONL streamed from the first byte, whatever the size), start a dataset export
(a background job with its progress) and download a finished job's file. Files are served only
here, after the permission check, never from a public media URL."""

from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from common.exceptions import ApplicationError
from exports.activity import CONTENT_TYPE as ACTIVITY_CONTENT_TYPE
from exports.activity import study_activity_filename, study_activity_lines
from exports.formats import CONTENT_TYPES
from exports.jobs import export_job_start
from exports.machine_labels import machine_labels_csv, machine_runs_json
from exports.models import ExportJob
from exports.selectors import RECENT_JOBS, export_job_get_visible_to, export_job_list_for_study
from exports.services import DIRECT_PARQUET_MAX_ITEMS, dataset_export_download
from labeling.access import study_can_export
from labeling.models import Study
from machines.models import MachineAnnotator
from web.views.studies import study_or_404


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=ExportJob.Format.choices, initial=ExportJob.Format.JSONL)
    raw = forms.BooleanField(
        required=False, label="Every annotator's labels", help_text="raw labels, per annotator"
    )
    pseudonymise = forms.BooleanField(
        required=False,
        label="Pseudonymise annotators",
        help_text="annotator-01, annotator-02, ... instead of usernames",
    )


def _study_for_export(request: HttpRequest, slug: str) -> Study:
    study, roles = study_or_404(request, slug)
    if not study_can_export(roles=roles):
        raise PermissionDenied("Exports are for the study's managers.")
    return study


def _jobs_context(study: Study) -> dict:
    jobs = list(export_job_list_for_study(study=study)[:RECENT_JOBS])
    return {"study": study, "jobs": jobs, "polling": any(job.is_active for job in jobs)}


@login_required
def study_export(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the page. POST: one form, two buttons: download at once (redirected to the
    download's GET address, which carries the options and no token) or start an export job
    (format, raw, pseudonymise). Parquet of a study past DIRECT_PARQUET_MAX_ITEMS items is
    written whole before it can be sent, so its Download now starts a job, and says so."""
    study = _study_for_export(request, slug)
    form = ExportForm(request.POST or None)
    items = study.items.count()
    status = 200
    if request.method == "POST":
        if form.is_valid():
            whole = form.cleaned_data["format"] == "parquet" and items > DIRECT_PARQUET_MAX_ITEMS
            download = request.POST.get("action") == "download"
            if download and not whole:
                query = urlencode({k: v for k, v in form.cleaned_data.items() if v is not False})
                return redirect(f"{reverse('study_export_download', args=[study.slug])}?{query}")
            try:
                job = export_job_start(study=study, user=request.user, **form.cleaned_data)
            except ApplicationError as error:
                messages.error(request, error.message)
            else:
                started = f"Export {job.pk} ({job.get_format_display()}) started."
                if download:
                    started = (
                        f"A Parquet file is written whole before it is sent, and this study has "
                        f"more than {DIRECT_PARQUET_MAX_ITEMS:,} items: {started} Download it "
                        "below when it is done."
                    )
                messages.success(request, started)
                return redirect("study_export", slug=study.slug)
        status = 400
    context = {
        "has_machines": MachineAnnotator.objects.filter(study=study).exists(),
        **_jobs_context(study),
        "oversees": True,
        "manages": True,
        "form": form,
        "items": items,
        "parquet_whole": items > DIRECT_PARQUET_MAX_ITEMS,
        "parquet_max": DIRECT_PARQUET_MAX_ITEMS,
    }
    return render(request, "web/export.html", context, status=status)


@login_required
@require_GET
def study_export_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    """The list of the study's export jobs (htmx polls it while one is queued or running)."""
    study = _study_for_export(request, slug)
    return render(request, "web/_export_jobs.html", _jobs_context(study))


@login_required
@require_GET
def export_job_download(request: HttpRequest, slug: str, job_id: int) -> FileResponse:
    study = _study_for_export(request, slug)
    job = export_job_get_visible_to(user=request.user, job_id=job_id, study=study)
    if job is None or job.status != ExportJob.Status.DONE or not job.file:
        raise Http404("No such export, or it is not finished.")
    return FileResponse(
        job.file.open("rb"),
        as_attachment=True,
        filename=job.filename,
        content_type=CONTENT_TYPES[job.format],
    )


@login_required
@require_GET
def study_activity_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The study's activity log as JSON Lines (exports.activity)."""
    study = _study_for_export(request, slug)
    response = StreamingHttpResponse(
        study_activity_lines(study=study), content_type=ACTIVITY_CONTENT_TYPE
    )
    response["Content-Disposition"] = f'attachment; filename="{study_activity_filename(study)}"'
    return response


@login_required
@require_GET
def study_export_download(request: HttpRequest, slug: str) -> HttpResponse:
    """The dataset at once: CSV and JSONL of any size streamed from the first byte, Parquet
    (written whole first) for a study of at most DIRECT_PARQUET_MAX_ITEMS items."""
    study = _study_for_export(request, slug)
    form = ExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Choose csv, jsonl or parquet.", status=400, content_type="text/plain")
    try:
        download = dataset_export_download(study=study, **form.cleaned_data)
    except ApplicationError as error:
        return HttpResponse(error.message, status=400, content_type="text/plain")
    return download.response()


@login_required
@require_GET
def study_export_machines(request: HttpRequest, slug: str) -> HttpResponse:
    """The machine annotators' part of the dataset, apart from people's labels:
    `?file=labels` (CSV, one row per machine label, naming the annotator's kind) or
    `?file=runs` (JSON, each run's record)."""
    study = _study_for_export(request, slug)
    chosen = request.GET.get("file")
    if chosen == "labels":
        response = HttpResponse(
            machine_labels_csv(study=study), content_type="text/csv; charset=utf-8"
        )
        name = f"{study.slug}-machine-labels.csv"
    elif chosen == "runs":
        response = HttpResponse(machine_runs_json(study=study), content_type="application/json")
        name = f"{study.slug}-machine-runs.json"
    else:
        return HttpResponse(
            "Choose file=labels or file=runs.", status=400, content_type="text/plain"
        )
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
