from django.conf import settings
from django.db import models

from common.models import TimestampedModel
from corpus.models import Repository
from labeling.models import Study

MIN_INTERVAL_MINUTES = 5
MAX_INTERVAL_MINUTES = 7 * 24 * 60


class Source(TimestampedModel):
    """A slice of a GitHub repository to keep in the corpus (for example: closed, label "bug")."""

    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        ALL = "all", "All"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="sources")
    state = models.CharField(max_length=10, choices=State.choices, default=State.CLOSED)
    # Every one of these labels must be on an issue (GitHub's `labels` filter).
    labels = models.JSONField(default=list, blank=True)
    # Only issues updated at or after this moment.
    since = models.DateTimeField(null=True, blank=True)
    include_pull_requests = models.BooleanField(default=False)
    interval_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    # Where the next sync starts: {"since": the newest `updated_at` committed, ISO 8601}. A time,
    # never a page number: the list moves while it is read (see GitHubClient.issue_pages).
    cursor = models.JSONField(default=dict, blank=True)
    last_synced_at = models.DateTimeField(null=True, blank=True)
    # When the stored issues were last checked against a full listing (finds deleted ones).
    reconciled_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["repository", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    interval_minutes__gte=MIN_INTERVAL_MINUTES,
                    interval_minutes__lte=MAX_INTERVAL_MINUTES,
                ),
                name="source_interval_bounds",
            ),
        ]

    def __str__(self) -> str:
        labels = f" [{', '.join(self.labels)}]" if self.labels else ""
        return f"{self.repository.full_name} ({self.state}){labels}"


class SyncRun(models.Model):
    """One sync of a source, possibly spread over several task executions (a rate-limit wait,
    a retry after a server error, a worker that died). At most one run of a source is active.

    A run is leased: whoever executes it pushes `lease_expires_at` forward as it makes progress.
    An active run whose lease has expired counts as lost, and the next sync request replaces it.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING = "waiting", "Waiting for rate limit"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Trigger(models.TextChoices):
        MANUAL = "manual", "Sync now"
        SCHEDULE = "schedule", "Schedule"
        COMMAND = "command", "Command line"

    ACTIVE_STATUSES = (Status.QUEUED, Status.RUNNING, Status.WAITING)

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    trigger = models.CharField(max_length=10, choices=Trigger.choices, default=Trigger.MANUAL)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    queued_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # seen, created, updated, unchanged, pull_requests_skipped, comments, fixes, gone, ...
    counts = models.JSONField(default=dict, blank=True)
    requests_used = models.PositiveIntegerField(default=0)
    rate_limit_remaining = models.IntegerField(null=True, blank=True)
    rate_limit_reset = models.DateTimeField(null=True, blank=True)
    # 0 to 1, estimated from the span of update times covered so far.
    progress = models.FloatField(default=0.0)
    error = models.TextField(blank=True)
    # The Celery task id of the message that started the run (empty when run in-process).
    task_id = models.CharField(max_length=64, blank=True)
    # Who holds the lease ("host:pid:token"); empty while queued.
    worker = models.CharField(max_length=200, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # How many times an execution claimed this run.
    attempts = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-queued_at", "-id"]
        constraints = [
            # The database itself keeps two syncs of one source from running at once.
            models.UniqueConstraint(
                fields=["source"],
                condition=models.Q(status__in=["queued", "running", "waiting"]),
                name="one_active_run_per_source",
            ),
            models.CheckConstraint(
                condition=models.Q(progress__gte=0, progress__lte=1), name="run_progress_fraction"
            ),
        ]
        indexes = [models.Index(fields=["source", "-queued_at"])]

    def __str__(self) -> str:
        return f"sync of {self.source_id}: {self.status}"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE_STATUSES

    @property
    def percent(self) -> int:
        return round(100 * self.progress)


class StudyFollow(TimestampedModel):
    """A study that takes in the matching issues a source brings: new issues (and stored ones
    that come to match, for example once a fix is linked) become items of the study's current
    round and are assigned. Issues are never removed from a study by a sync."""

    class State(models.TextChoices):
        ANY = "any", "Any"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="follows")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="source_follows")
    state = models.CharField(max_length=10, choices=State.choices, default=State.ANY)
    # Every one of these labels must be on the issue (compared without regard to case).
    labels = models.JSONField(default=list, blank=True)
    requires_linked_fix = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )

    class Meta:
        ordering = ["source", "study"]
        constraints = [
            models.UniqueConstraint(fields=["source", "study"], name="unique_study_follow"),
        ]

    def __str__(self) -> str:
        return f"{self.study} follows {self.source}"


class IssueImportJob(models.Model):
    """An issue dump (JSONL or a JSON array, as `import_issues` reads it) uploaded into a study
    and imported in the background: its issues enter the corpus and, those that are not pull
    requests, the study's last round. Bad lines are skipped and listed, as the command does.
    The uploaded file waits under MEDIA_ROOT (issue-imports/) until the job has run."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    ERRORS_KEPT = 1_000  # lines with errors listed; `errors_total` counts them all

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="issue_imports")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    file_name = models.CharField(max_length=255)
    file = models.FileField(upload_to="issue-imports/", blank=True, max_length=300)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    lines_total = models.PositiveIntegerField(default=0)
    lines_done = models.PositiveIntegerField(default=0)
    lines_accepted = models.PositiveIntegerField(default=0)
    issues_created = models.PositiveIntegerField(default=0)
    issues_updated = models.PositiveIntegerField(default=0)
    items_added = models.PositiveIntegerField(default=0)
    # [line, message] pairs in line order, the command's messages; at most ERRORS_KEPT.
    errors = models.JSONField(default=list, blank=True)
    errors_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)  # why the job failed as a whole
    # When a queued job's task was last sent, then the running execution's last progress: a job
    # running but silent for INGEST_LEASE_SECONDS lost its worker, and the task delivered again
    # takes it over (the import is idempotent).
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "-created_at"])]

    def __str__(self) -> str:
        return f"issue import {self.pk} into {self.study_id}: {self.status}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def percent(self) -> int:
        if self.status in (self.Status.DONE, self.Status.FAILED):
            return 100
        return min(100, round(100 * self.lines_done / self.lines_total)) if self.lines_total else 0
