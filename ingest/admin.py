"""Admin: reading sources and runs, pausing a source or changing its interval, "Sync now".
Sources are added on the Sources page, the API or `sync_github`; saves go through services."""

from django.contrib import admin, messages

from ingest.models import Source, StudyFollow, SyncRun


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = [
        "repository",
        "state",
        "labels",
        "include_pull_requests",
        "enabled",
        "interval_minutes",
        "last_synced_at",
    ]
    list_filter = ["enabled", "state"]
    list_select_related = ["repository"]
    fields = [
        "repository", "state", "labels", "since", "include_pull_requests", "enabled",
        "interval_minutes", "cursor", "last_synced_at", "reconciled_at", "created_by",
    ]  # fmt: skip
    readonly_fields = [
        "repository", "state", "labels", "since", "include_pull_requests", "cursor",
        "last_synced_at", "reconciled_at", "created_by",
    ]  # fmt: skip
    actions = ["sync_now"]

    def has_add_permission(self, request) -> bool:
        return False

    def save_model(self, request, obj, form, change) -> None:
        from ingest.sources import source_update  # see sync_now

        source_update(
            source=Source.objects.get(pk=obj.pk),
            data={name: form.cleaned_data[name] for name in ("enabled", "interval_minutes")},
        )

    @admin.action(description="Sync now")
    def sync_now(self, request, queryset) -> None:
        # Imported here: these bring PyGithub and Celery's tasks, which every start of Django
        # (the admin is loaded with the apps) would otherwise import, 0.3 s, for two actions.
        from ingest.dispatch import sync_request

        for source in queryset:
            sync_request(source=source, requested_by=request.user)
        self.message_user(request, f"Sync requested for {queryset.count()} sources.", messages.INFO)


@admin.register(SyncRun)
class SyncRunAdmin(admin.ModelAdmin):
    list_display = [
        "id", "source", "status", "trigger", "queued_at", "finished_at", "requests_used",
        "progress", "attempts",
    ]  # fmt: skip
    list_filter = ["status", "trigger"]
    list_select_related = ["source__repository"]

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(StudyFollow)
class StudyFollowAdmin(admin.ModelAdmin):
    list_display = ["study", "source", "state", "labels", "requires_linked_fix"]
    list_select_related = ["study", "source__repository"]

    def has_add_permission(self, request) -> bool:
        # Follows are made through the API (POST /api/sources/{id}/follows/), which checks that
        # the user manages the study.
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
