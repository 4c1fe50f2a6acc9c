"""The export page of a study (/studies/{slug}/export/), for its managers: start a dataset
export (a background job with its progress), download a finished job's file, or download a
small study's dataset at once. Files are served only here, after the permission check, never
from a public media URL."""

import tempfile
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
from exports.services import dataset_export_chunks, dataset_export_write
from labeling.access import study_can_export
from labeling.models import Study
from machines.models import MachineAnnotator
from web.views.studies import study_or_404

# A study up to this size downloads at once; a larger one goes through a job.
DIRECT_DOWNLOAD_MAX_ITEMS = 5_000


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
    """GET: the page. POST: one form, two buttons: download at once (a small study; redirected
    to the download's GET address, which carries the options and no token) or start an export
    job (format, raw, pseudonymise)."""
    study = _study_for_export(request, slug)
    form = ExportForm(request.POST or None)
    status = 200
    if request.method == "POST":
        if form.is_valid() and request.POST.get("action") == "download":
            query = urlencode({k: v for k, v in form.cleaned_data.items() if v is not False})
            return redirect(f"{reverse('study_export_download', args=[study.slug])}?{query}")
        if form.is_valid():
            try:
                job = export_job_start(study=study, user=request.user, **form.cleaned_data)
            except ApplicationError as error:
                messages.error(request, error.message)
            else:
                messages.success(request, f"Export {job.pk} ({job.get_format_display()}) started.")
                return redirect("study_export", slug=study.slug)
        status = 400
    items = study.items.count()
    context = {
        "has_machines": MachineAnnotator.objects.filter(study=study).exists(),
        **_jobs_context(study),
        "oversees": True,
        "manages": True,
        "form": form,
        "items": items,
        "direct": items <= DIRECT_DOWNLOAD_MAX_ITEMS,
        "direct_max": DIRECT_DOWNLOAD_MAX_ITEMS,
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
    """The dataset at once, for a study of at most DIRECT_DOWNLOAD_MAX_ITEMS items: CSV and
    JSONL streamed a row at a time, Parquet written to a temporary file first."""
    study = _study_for_export(request, slug)
    form = ExportForm(request.GET)
    if not form.is_valid():
        return HttpResponse("Choose csv, jsonl or parquet.", status=400, content_type="text/plain")
    if study.items.count() > DIRECT_DOWNLOAD_MAX_ITEMS:
        return HttpResponse(
            f"This study has more than {DIRECT_DOWNLOAD_MAX_ITEMS:,} items: start an export "
            "and download its file when it is done.",
            status=400,
            content_type="text/plain",
        )
    options = {
        "study": study,
        "format": form.cleaned_data["format"],
        "raw": form.cleaned_data["raw"],
        "pseudonymise": form.cleaned_data["raw"] and form.cleaned_data["pseudonymise"],
    }
    filename = ExportJob(
        study=study,
        format=options["format"],
        raw=options["raw"],
        pseudonymise=options["pseudonymise"],
    ).filename
    if options["format"] == "parquet":
        # Closed by FileResponse once sent; a temporary file goes when closed.
        scratch = tempfile.TemporaryFile()  # noqa: SIM115
        dataset_export_write(**options, output=scratch)
        scratch.seek(0)
        return FileResponse(
            scratch, as_attachment=True, filename=filename, content_type=CONTENT_TYPES["parquet"]
        )
    response = StreamingHttpResponse(
        dataset_export_chunks(**options), content_type=CONTENT_TYPES[options["format"]]
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


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
