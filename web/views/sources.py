"""The Sources page (/sources/): GitHub sources, "Sync now" and a live progress bar per source.

Pages sit above every domain app; the sources and runs shown here belong to ingest.
"""

from datetime import UTC

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from common.exceptions import ApplicationError
from ingest.dispatch import sync_request
from ingest.models import MAX_INTERVAL_MINUTES, MIN_INTERVAL_MINUTES, Source, SyncRun
from ingest.selectors import (
    runs_latest,
    source_list,
    sync_run_get,
    sync_run_list,
)
from ingest.sources import source_add, source_delete
from labeling.access import study_list_visible_to, user_can_manage_sources

RECENT_RUNS = 15


class SourceForm(forms.Form):
    repository = forms.CharField(
        max_length=300, help_text="OWNER/NAME, for example microsoft/DeepSpeed"
    )
    state = forms.ChoiceField(choices=Source.State.choices, initial=Source.State.CLOSED)
    labels = forms.CharField(
        required=False, help_text="Issues must carry all of them; separate with commas"
    )
    since = forms.DateTimeField(
        required=False,
        help_text="Only issues updated since then (UTC)",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )
    interval_minutes = forms.IntegerField(
        initial=60, min_value=MIN_INTERVAL_MINUTES, max_value=MAX_INTERVAL_MINUTES
    )
    include_pull_requests = forms.BooleanField(required=False)

    def source_options(self) -> dict:
        data = dict(self.cleaned_data)
        data["labels"] = [label.strip() for label in data["labels"].split(",") if label.strip()]
        since = data["since"]
        if since is not None:
            data["since"] = since.astimezone(UTC) if since.tzinfo else since.replace(tzinfo=UTC)
        return data


def _check_manager(request: HttpRequest) -> None:
    if not user_can_manage_sources(user=request.user):
        raise PermissionDenied("Sources are for superusers and the managers of a study.")


# Not one transaction per request: a sync request commits its run at once, so that the task it
# sends runs now (inline in the embedded default, CELERY_TASK_ALWAYS_EAGER) and the answer shows
# the run as that left it, not as queued; and adding a source asks GitHub outside a transaction.
# Every write here is a service with its own transaction.
@transaction.non_atomic_requests
@login_required
def sources(request: HttpRequest) -> HttpResponse:
    """GET: the page, or with `?run=ID` (htmx) one run's progress. POST: add a source
    (`action=create`), start a sync (`action=sync`, `source=ID`) or remove a source
    (`action=remove`, `source=ID`; its issues stay)."""
    _check_manager(request)
    if request.method == "POST":
        return _sources_post(request)
    run_id = request.GET.get("run", "")
    if run_id:
        run = sync_run_get(run_id=int(run_id)) if run_id.isdigit() else None
        if run is None:
            raise Http404("No such sync run.")
        return _run_fragment(request, run)
    return _page(request, SourceForm())


def _run_fragment(request: HttpRequest, run: SyncRun) -> HttpResponse:
    """One run's progress for htmx; once the run has ended, the list of recent syncs comes
    along (an out-of-band swap), so that it shows the run without a reload."""
    context = {"run": run, "source_id": run.source_id, "recent_runs": None}
    if not run.is_active:
        context["recent_runs"] = _recent_runs()
    return render(request, "web/_sync_run_update.html", context)


def _recent_runs() -> list[SyncRun]:
    return list(sync_run_list()[:RECENT_RUNS])


def _page(request: HttpRequest, form: SourceForm, *, status: int = 200) -> HttpResponse:
    # A follow names its study: shown only to those who may see that study.
    listed = list(source_list(visible_studies=study_list_visible_to(user=request.user)))
    latest = runs_latest(sources=listed)
    rows = [{"source": source, "run": latest.get(source.pk)} for source in listed]
    context = {"rows": rows, "form": form, "recent_runs": _recent_runs()}
    return render(request, "web/sources.html", context, status=status)


def _sources_post(request: HttpRequest) -> HttpResponse:
    action = request.POST.get("action")
    if action == "create":
        form = SourceForm(request.POST)
        if not form.is_valid():
            return _page(request, form, status=400)
        try:
            added = source_add(**form.source_options(), created_by=request.user)
        except ApplicationError as error:
            form.add_error(None, error.message)
            return _page(request, form, status=400)
        messages.success(request, f"Added the source {added.source}.")
        if added.unchecked:
            messages.warning(request, f"{added.unchecked} Its first sync will tell.")
        return redirect("sources")
    if action == "sync":
        source_id = request.POST.get("source", "")
        source = Source.objects.filter(pk=source_id).first() if source_id.isdigit() else None
        if source is None:
            raise Http404("No such source.")
        run = sync_request(source=source, requested_by=request.user)
        if request.htmx:
            # Read again: an inline task has run (and committed) by now.
            return _run_fragment(request, sync_run_get(run_id=run.pk))
        messages.success(request, f"Sync of {source} requested.")
        return redirect("sources")
    if action == "remove":
        source_id = request.POST.get("source", "")
        source = Source.objects.filter(pk=source_id).first() if source_id.isdigit() else None
        if source is None:
            raise Http404("No such source.")
        name = str(source)
        try:
            source_delete(source=source)
        except ApplicationError as error:
            messages.error(request, error.message)
            return redirect("sources")
        messages.success(request, f"Removed the source {name}; its issues stay in the corpus.")
        return redirect("sources")
    return HttpResponse("Unknown action.", status=400)
