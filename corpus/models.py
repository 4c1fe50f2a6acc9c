"""The corpus: GitHub repositories, issues, their comments and linked fixes, as GitHub said them.

Only `corpus.services` writes these rows; ingestion and import files hand it records.
"""

from django.db import models
from django.db.models.functions import Lower

from common.models import TimestampedModel


class Repository(TimestampedModel):
    """A GitHub repository, under the name the corpus first met it by (references such as
    "owner/name#number" keep working after a rename). GitHub's id says which repository it is:
    the corpus holds one row per id (see `corpus.services.repository_note_upstream`)."""

    owner = models.CharField(max_length=100)
    name = models.CharField(max_length=100)
    github_id = models.BigIntegerField(null=True, blank=True, unique=True)
    # When GitHub answers with a redirect, the repository's current "owner/name".
    renamed_to = models.CharField(max_length=201, blank=True)

    class Meta:
        ordering = ["owner", "name"]
        verbose_name_plural = "repositories"
        constraints = [
            models.UniqueConstraint(fields=["owner", "name"], name="unique_repository_name"),
        ]

    def __str__(self) -> str:
        return self.full_name

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    @property
    def html_url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"


class RepositoryAlias(models.Model):
    """Another name of a repository: one GitHub answered before a later rename, or one it was
    met under in an import file or a source before GitHub said which repository that is.
    Lookups by name find the repository under it (`corpus.selectors.repository_by_name`)."""

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="aliases")
    owner = models.CharField(max_length=100)
    name = models.CharField(max_length=100)

    class Meta:
        ordering = ["repository", "owner", "name"]
        verbose_name_plural = "repository aliases"
        constraints = [
            # GitHub's names ignore case: one name is an alias of one repository.
            models.UniqueConstraint(Lower("owner"), Lower("name"), name="unique_repository_alias"),
        ]

    def __str__(self) -> str:
        return f"{self.full_name} (for {self.repository_id})"

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class Issue(models.Model):
    class State(models.TextChoices):
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"

    repository = models.ForeignKey(Repository, on_delete=models.CASCADE, related_name="issues")
    number = models.PositiveIntegerField()
    github_id = models.BigIntegerField(null=True, blank=True)
    is_pull_request = models.BooleanField(default=False)
    title = models.TextField()
    body = models.TextField(blank=True)
    # Rendered and sanitised once when stored, so that no page ever shows GitHub's raw HTML.
    body_html = models.TextField(blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    state_reason = models.CharField(max_length=30, blank=True)
    author = models.CharField(max_length=100, blank=True)
    labels = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    closed_at = models.DateTimeField(null=True, blank=True)
    comments_count = models.PositiveIntegerField(default=0)
    raw = models.JSONField(default=dict, blank=True)
    # Facts extracted from the text (exception types, versions, parallelism words, GPU counts).
    facets = models.JSONField(default=dict, blank=True)
    stored_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["repository", "number"]
        constraints = [
            models.UniqueConstraint(fields=["repository", "number"], name="unique_issue_number"),
        ]
        indexes = [models.Index(fields=["repository", "updated_at"])]

    def __str__(self) -> str:
        return f"{self.repository.full_name}#{self.number}"

    @property
    def html_url(self) -> str:
        return self.html_url_of(
            self.repository.owner,
            self.repository.name,
            self.number,
            is_pull_request=self.is_pull_request,
        )

    @staticmethod
    def html_url_of(owner: str, name: str, number: int, *, is_pull_request: bool) -> str:
        """An issue's (or pull request's) page on GitHub."""
        kind = "pull" if is_pull_request else "issues"
        return f"https://github.com/{owner}/{name}/{kind}/{number}"


class IssueComment(models.Model):
    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="comments")
    github_id = models.BigIntegerField(unique=True)
    author = models.CharField(max_length=100, blank=True)
    body = models.TextField(blank=True)
    body_html = models.TextField(blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()

    class Meta:
        ordering = ["issue", "created_at", "github_id"]
        indexes = [models.Index(fields=["issue", "created_at"])]

    def __str__(self) -> str:
        return f"comment {self.github_id} on issue {self.issue_id}"


class LinkedFix(models.Model):
    class Kind(models.TextChoices):
        PULL_REQUEST = "pr", "Pull request"
        COMMIT = "commit", "Commit"

    issue = models.ForeignKey(Issue, on_delete=models.CASCADE, related_name="linked_fixes")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    ref = models.CharField(max_length=100)
    url = models.URLField(max_length=500, blank=True)
    merged_at = models.DateTimeField(null=True, blank=True)
    files_changed = models.PositiveIntegerField(null=True, blank=True)
    additions = models.PositiveIntegerField(null=True, blank=True)
    deletions = models.PositiveIntegerField(null=True, blank=True)
    # How the link was found (a closing commit, a merged cross-referencing PR, "fixes #N").
    evidence = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["issue", "kind", "ref"]
        constraints = [
            models.UniqueConstraint(fields=["issue", "kind", "ref"], name="unique_linked_fix"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.ref}"
