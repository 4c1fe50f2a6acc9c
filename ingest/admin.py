from django.contrib import admin

from ingest.models import Source, SyncRun


@admin.register(Source)
class SourceAdmin(admin.ModelAdmin):
    list_display = [
        "repository",
        "state",
        "labels",
        "enabled",
        "interval_minutes",
        "last_synced_at",
    ]


@admin.register(SyncRun)
class SyncRunAdmin(admin.ModelAdmin):
    list_display = ["source", "status", "queued_at", "finished_at", "requests_used", "progress"]
    readonly_fields = [f for f in ("counts", "error")]
