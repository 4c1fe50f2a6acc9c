from django.db import models

from common.models import TimestampedModel
from labeling.models import Repository


class Source(TimestampedModel):
    """A slice of a GitHub repository to keep in the corpus (for example: closed, label "bug")."""

    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        ALL = "all", "All"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="sources")
    state = models.CharField(max_length=10, choices=State.choices, default=State.CLOSED)
    labels = models.JSONField(default=list, blank=True)
    since = models.DateTimeField(null=True, blank=True)
    include_pull_requests = models.BooleanField(default=False)
    interval_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    # Where the next sync starts: the newest `updated_at` stored and the page reached.
    cursor = models.JSONField(default=dict, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["repository", "id"]

    def __str__(self) -> str:
        labels = f" [{', '.join(self.labels)}]" if self.labels else ""
        return f"{self.repository.full_name} ({self.state}){labels}"


class SyncRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for rate limit"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    requests_used = models.PositiveIntegerField(default=0)
    rate_limit_remaining = models.IntegerField(null=True, blank=True)
    rate_limit_reset = models.DateTimeField(null=True, blank=True)
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-queued_at", "-id"]

    def __str__(self) -> str:
        return f"sync of {self.source_id}: {self.status}"
