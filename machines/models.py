"""Machine annotators: language models and a scikit-learn model (machines.classical) that label
a study's items beside people. Their labels live here, apart from people's (labeling.Annotation):
they are never shown to a person before that person submitted their own labels of the item,
and by default never count toward k and never enter gold; the agreement report measures them
against people and gold. A study may count one language model as one of its k raters
(machines.seats).
"""

from django.conf import settings
from django.db import models

from common.models import TimestampedModel
from labeling.models import Study, StudyItem
from taxonomy.models import CodebookVersion, Dimension


class MachineAnnotator(TimestampedModel):
    class Kind(models.TextChoices):
        LLM = "llm", "Language model (chat-completions endpoint)"
        CLASSICAL = "classical", "Classical model trained on gold labels"

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="machine_annotators")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.LLM)
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    # The NAME of the environment variable (or setting) holding the key, never the key itself.
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0)
    seed = models.IntegerField(null=True, blank=True)
    samples = models.PositiveSmallIntegerField(default=1)
    # The "one human replaced" design, chosen by a manager for one machine of a study at most:
    # its labels count as a rater's (toward an item's k, in the human agreement figures and in
    # gold resolution). Off by default: a machine is reported apart and never enters gold.
    counts_toward_k = models.BooleanField(default=False)
    # The user whose assignments are the machine's seats in that design (machines.seats).
    rater_user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="machine_annotator",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["study", "name"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="unique_machine_annotator"),
            models.CheckConstraint(
                condition=models.Q(samples__gte=1, samples__lte=20), name="machine_samples_range"
            ),
            models.CheckConstraint(
                condition=models.Q(temperature__gte=0, temperature__lte=2),
                name="machine_temperature_range",
            ),
            models.UniqueConstraint(
                fields=["study"],
                condition=models.Q(counts_toward_k=True),
                name="one_machine_replacing_a_human",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class MachineRun(models.Model):
    """One pass of a machine annotator over a study's items, with everything needed to report
    and repeat it: model, endpoint host, parameters, the prompt template and its hash, dates,
    requests and tokens."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    annotator = models.ForeignKey(MachineAnnotator, on_delete=models.CASCADE, related_name="runs")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    codebook_version = models.ForeignKey(
        CodebookVersion, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    task_id = models.CharField(max_length=100, blank=True)
    items_total = models.PositiveIntegerField(default=0)
    items_done = models.PositiveIntegerField(default=0)  # labeled by this run
    items_skipped = models.PositiveIntegerField(default=0)  # labeled before with these settings
    items_failed = models.PositiveIntegerField(default=0)
    requests = models.PositiveIntegerField(default=0)  # HTTP requests sent, retries included
    cache_hits = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveBigIntegerField(default=0)
    tokens_out = models.PositiveBigIntegerField(default=0)
    prompt_template = models.TextField(blank=True)
    prompt_hash = models.CharField(max_length=64, blank=True)
    # Hash of everything that decides an answer (model, host, parameters, prompt): a run with
    # the same one resumes an earlier run's items instead of labeling them again.
    settings_hash = models.CharField(max_length=64, blank=True, db_index=True)
    endpoint_host = models.CharField(max_length=300, blank=True)
    # {"model", "temperature", "seed", "samples", "response_format", "issue_char_budget",
    #  "max_in_flight", "models_answering": [...]}
    parameters = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    # The lease of the worker running the run: another worker (a second delivery of the task, a
    # resumed run) takes the run only once the lease expired; the holder renews it as it goes.
    lease_owner = models.CharField(max_length=100, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # The first failures of single items: [{"item": id, "error": "..."}] (the run goes on).
    item_errors = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["annotator", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.annotator}"


class MachineLabel(models.Model):
    """What a machine said about one item on one dimension: category keys (empty: none
    applies), the rationale, and the confidence (a language model's: the share of the samples
    agreeing with the majority answer; the scikit-learn model's: its predicted probability). A
    dimension whose screening rule the machine's own answer excluded is not stored, as people's
    ratings of it do not count either."""

    run = models.ForeignKey(MachineRun, on_delete=models.CASCADE, related_name="labels")
    item = models.ForeignKey(StudyItem, on_delete=models.CASCADE, related_name="machine_labels")
    dimension = models.ForeignKey(Dimension, on_delete=models.PROTECT, related_name="+")
    categories = models.JSONField(default=list)
    confidence = models.FloatField()
    rationale = models.TextField(blank=True)
    # {"samples": [this dimension's part of each sample's answer], "responses": [cache keys]}
    raw_response = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "item", "dimension__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item", "dimension"], name="unique_machine_label"
            ),
        ]
        indexes = [models.Index(fields=["item", "run"])]

    def __str__(self) -> str:
        return f"{self.run} on item {self.item_id}, dimension {self.dimension_id}"


class MachineResponse(models.Model):
    """The cache: a valid raw answer of an endpoint, keyed by the hash of the prompt, the model
    and the parameters (sample number included), so that a rerun pays nothing."""

    key = models.CharField(max_length=64, unique=True)
    prompt_hash = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    parameters = models.JSONField(default=dict)
    response = models.JSONField()
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"response {self.key[:12]} of {self.model}"
