"""Uploading files in the product: an annotation CSV into a study (/studies/{slug}/import/), a
codebook file (/codebooks/import/), a dataset file to restore a study from (/studies/restore/)
and an issue dump into a study (/studies/{slug}/import/issues/, imported in the background).
Thin: labeling.services.imports, exports.uploads and ingest read and check them with the
commands' own functions."""

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from common.exceptions import ApplicationError
from exports.formats import FORMATS
from exports.uploads import dataset_upload_limit, dataset_upload_restore
from ingest.dispatch import issue_upload_start
from ingest.issue_uploads import issue_upload_limit
from ingest.selectors import issue_import_jobs
from labeling.access import user_can_create_study
from labeling.models import Study
from labeling.services.imports import (
    ANNOTATION_FILE_MAX_BYTES,
    CODEBOOK_FILE_MAX_BYTES,
    codebook_upload,
    study_annotations_upload,
)
from web.views.studies import study_for_manager


class AnnotationUploadForm(forms.Form):
    file = forms.FileField(label="Annotation file (CSV: issue,annotator,dimension,labels)")
    create_users = forms.BooleanField(
        required=False, label="Create unknown annotators as inactive accounts"
    )


class CodebookUploadForm(forms.Form):
    file = forms.FileField(label="Codebook file (JSON, or YAML named .yaml/.yml)")


class DatasetUploadForm(forms.Form):
    file = forms.FileField(label="Dataset file (JSONL, CSV or Parquet, as the export writes it)")
    study = forms.SlugField(
        required=False,
        max_length=100,
        label="Restore under this slug (empty: the file's)",
        allow_unicode=False,
    )
    format = forms.ChoiceField(
        required=False,
        choices=[("", "From the file's name"), *((name, name) for name in FORMATS)],
        label="Format",
    )


class IssueDumpUploadForm(forms.Form):
    file = forms.FileField(label="Issue dump (JSONL, or a JSON array, of GitHub issue objects)")


def _read(upload, limit: int) -> bytes:
    """The upload's bytes; a file over `limit` is refused unread, in the readers' words."""
    if upload.size > limit:
        raise ApplicationError(f"file is larger than {limit} bytes; nothing was imported.")
    return upload.read()


def _problems(error: ApplicationError) -> list[str]:
    problems = error.extra.get("errors") or []
    place = error.extra.get("place", "line")
    return [
        f"{place} {problem[0]}: {problem[1]}" if isinstance(problem, list | tuple) else str(problem)
        for problem in problems
    ]


@login_required
@require_http_methods(["GET", "POST"])
def study_import(request: HttpRequest, slug: str) -> HttpResponse:
    study, _ = study_for_manager(request, slug, IMPORTS_REFUSAL)
    form = AnnotationUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                report = study_annotations_upload(
                    study=study,
                    user=request.user,
                    content=_read(form.cleaned_data["file"], ANNOTATION_FILE_MAX_BYTES),
                    create_users=form.cleaned_data["create_users"],
                )
            except ApplicationError as error:
                messages.error(request, error.message)
                problems = _problems(error)
            else:
                messages.success(
                    request,
                    f"{report.annotations_written} annotations from {report.rows} rows; "
                    f"{report.items_added} issues added to {study.slug}; "
                    f"{report.users_created} inactive accounts created.",
                )
                return redirect("study_import", slug=study.slug)
        status = 400
    context = {
        "study": study,
        "oversees": True,
        "manages": True,
        "form": form,
        "problems": problems,
        "limit": ANNOTATION_FILE_MAX_BYTES,
    }
    return render(request, "web/study_import.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def codebook_import(request: HttpRequest) -> HttpResponse:
    form = CodebookUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                loaded = codebook_upload(
                    user=request.user,
                    content=_read(upload, CODEBOOK_FILE_MAX_BYTES),
                    filename=upload.name,
                )
            except ApplicationError as error:
                messages.error(request, error.message)
                problems = _problems(error)
            else:
                version = loaded.version
                state = "loaded" if loaded.written else "already loaded, unchanged"
                messages.success(
                    request, f"{version.codebook.name} {version.label} ({version.status}): {state}"
                )
                return redirect("codebook_version", version_id=version.pk)
        status = 400
    context = {"form": form, "problems": problems, "limit": CODEBOOK_FILE_MAX_BYTES}
    return render(request, "web/codebook_import.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def study_restore(request: HttpRequest) -> HttpResponse:
    if not user_can_create_study(user=request.user):
        raise PermissionDenied(
            "Superusers and people with the add-study permission set studies up."
        )
    form = DatasetUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                report = dataset_upload_restore(
                    user=request.user,
                    stream=upload.file,
                    size=upload.size,
                    filename=upload.name,
                    file_format=form.cleaned_data["format"] or None,
                    study_slug=form.cleaned_data["study"] or None,
                )
            except ApplicationError as error:
                messages.error(request, error.message)
                problems = _problems(error)
            else:
                messages.success(request, report.summary())
                return redirect("study_overview", slug=report.study)
        status = 400
    context = {"form": form, "problems": problems, "limit": dataset_upload_limit()}
    return render(request, "web/study_restore.html", context, status=status)


IMPORTS_REFUSAL = "Imports are for the study's managers."


def _issue_jobs_context(study: Study) -> dict:
    jobs = issue_import_jobs(study=study)
    return {"study": study, "jobs": jobs, "polling": any(job.is_active for job in jobs)}


@login_required
@require_http_methods(["GET", "POST"])
def study_issue_import(request: HttpRequest, slug: str) -> HttpResponse:
    """GET: the page and the study's latest issue imports. POST: queue an uploaded dump."""
    study, _ = study_for_manager(request, slug, IMPORTS_REFUSAL)
    form = IssueDumpUploadForm(request.POST or None, request.FILES or None)
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                job = issue_upload_start(
                    study=study,
                    user=request.user,
                    stream=upload,
                    size=upload.size,
                    filename=upload.name,
                )
            except ApplicationError as error:
                messages.error(request, error.message)
                problems = _problems(error)
            else:
                messages.success(request, f"Import {job.pk} of {job.file_name} queued.")
                return redirect("study_issue_import", slug=study.slug)
        status = 400
    context = {
        **_issue_jobs_context(study),
        "oversees": True,
        "manages": True,
        "form": form,
        "problems": problems,
        "limit": issue_upload_limit(),
    }
    return render(request, "web/study_issue_import.html", context, status=status)


@login_required
@require_GET
def study_issue_import_jobs(request: HttpRequest, slug: str) -> HttpResponse:
    """The study's latest issue imports (htmx polls it while one is queued or running)."""
    study, _ = study_for_manager(request, slug, IMPORTS_REFUSAL)
    return render(request, "web/_issue_import_jobs.html", _issue_jobs_context(study))
