from django.conf import settings
from django.db import models

from labeling.models import Study


class ExportJob(models.Model):
    """A dataset export run in the background: who asked for what, its progress, and the file it
    wrote (on the default storage, under exports/). The file is served only through views that
    check the study's permissions again, never from a public media URL."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class Format(models.TextChoices):
        CSV = "csv", "CSV"
        JSONL = "jsonl", "JSONL"
        PARQUET = "parquet", "Parquet"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="export_jobs")
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    format = models.CharField(max_length=10, choices=Format.choices, default=Format.JSONL)
    raw = models.BooleanField(default=False)
    pseudonymise = models.BooleanField(default=False)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    rows_done = models.PositiveIntegerField(default=0)
    rows_total = models.PositiveIntegerField(default=0)
    file = models.FileField(upload_to="exports/", blank=True, max_length=300)
    error = models.TextField(blank=True)
    # Executions that took the job; each writes only while the count is still its own, so a
    # second delivery or a re-queued job never lets two of them write (see export_job_run).
    attempts = models.PositiveIntegerField(default=0)
    # The running execution's last progress, or when the job was queued again: a running job
    # silent for EXPORT_LEASE_SECONDS lost its worker and is queued again.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.get_format_display()} export {self.pk} of {self.study_id}"

    @property
    def is_active(self) -> bool:
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def percent(self) -> int:
        if self.status == self.Status.DONE:
            return 100
        return min(100, round(100 * self.rows_done / self.rows_total)) if self.rows_total else 0

    @property
    def filename(self) -> str:
        """The name a download gets: study, format and what it holds."""
        parts = [self.study.slug, "dataset"]
        if self.raw:
            parts.append("raw-pseudonymised" if self.pseudonymise else "raw")
        return f"{'-'.join(parts)}.{self.format}"
