from datetime import datetime, timedelta

from django.conf import settings
from rest_framework import serializers

from corpus.models import Issue, IssueComment, LinkedFix
from corpus.records import is_http_url
from labeling.agreement import DEFAULT_MIN_PAIR_ITEMS
from labeling.agreement_report import MAX_BOOTSTRAP, MAX_MIN_PAIR_ITEMS
from labeling.models import Round, Study
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension


class CategorySerializer(serializers.ModelSerializer):
    parent = serializers.SlugRelatedField(
        slug_field="key", read_only=True, allow_null=True, help_text="null: a top-level category"
    )
    examples = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Category
        fields = [
            "key", "name", "parent", "definition", "include", "exclude", "examples",
            "deprecated", "metadata",
        ]  # fmt: skip


class DimensionSerializer(serializers.ModelSerializer):
    categories = CategorySerializer(many=True, read_only=True)

    class Meta:
        model = Dimension
        fields = ["key", "name", "description", "multi_label", "required", "ordinal", "categories"]


class CodebookVersionSerializer(serializers.ModelSerializer):
    class Meta:
        model = CodebookVersion
        fields = ["id", "label", "status", "content_hash", "published_at", "notes"]


class CodebookVersionDetailSerializer(CodebookVersionSerializer):
    codebook = serializers.CharField(source="codebook.name", read_only=True)
    dimensions = DimensionSerializer(many=True, read_only=True)

    class Meta(CodebookVersionSerializer.Meta):
        fields = [*CodebookVersionSerializer.Meta.fields, "codebook", "description", "dimensions"]


class CodebookSerializer(serializers.ModelSerializer):
    versions = CodebookVersionSerializer(many=True, read_only=True)

    class Meta:
        model = Codebook
        fields = ["id", "name", "description", "versions"]


class LinkedFixSerializer(serializers.ModelSerializer):
    # Rows imported before the import refused other schemes may hold a javascript: URL.
    url = serializers.SerializerMethodField()

    class Meta:
        model = LinkedFix
        fields = [
            "kind", "ref", "url", "merged_at", "files_changed", "additions", "deletions",
            "evidence",
        ]  # fmt: skip

    def get_url(self, fix: LinkedFix) -> str:
        return fix.url if is_http_url(fix.url) else ""


class IssueSerializer(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.full_name", read_only=True)
    labels = serializers.ListField(
        child=serializers.CharField(), read_only=True, help_text="GitHub label names"
    )
    html_url = serializers.CharField(read_only=True)

    class Meta:
        model = Issue
        fields = [
            "id", "repository", "number", "title", "state", "state_reason", "author", "labels",
            "is_pull_request", "created_at", "updated_at", "closed_at", "comments_count",
            "html_url",
        ]  # fmt: skip


# What a list row of IssueSerializer reads, as plain values (issue_rows).
ISSUE_ROW_FIELDS = (
    "id", "repository__owner", "repository__name", "number", "title", "state", "state_reason",
    "author", "labels", "is_pull_request", "created_at", "updated_at", "closed_at",
    "comments_count",
)  # fmt: skip


def issue_rows(rows: list[dict]) -> list[dict]:
    """IssueSerializer's output for a page of `ISSUE_ROW_FIELDS` values: a page of 100 issues
    made 100 model instances and 1,400 field conversions otherwise, most of the request."""
    return [
        {
            "id": row["id"],
            "repository": f"{row['repository__owner']}/{row['repository__name']}",
            "number": row["number"],
            "title": row["title"],
            "state": row["state"],
            "state_reason": row["state_reason"],
            "author": row["author"],
            "labels": [None if label is None else str(label) for label in row["labels"]],
            "is_pull_request": row["is_pull_request"],
            "created_at": datetime_shown(row["created_at"]),
            "updated_at": datetime_shown(row["updated_at"]),
            "closed_at": datetime_shown(row["closed_at"]),
            "comments_count": row["comments_count"],
            "html_url": Issue.html_url_of(
                row["repository__owner"],
                row["repository__name"],
                row["number"],
                is_pull_request=row["is_pull_request"],
            ),
        }
        for row in rows
    ]


_DATETIME = serializers.DateTimeField()


def datetime_shown(value: datetime | None) -> str | None:
    """DRF's DateTimeField output; a moment in UTC (as the database gives it and TIME_ZONE is)
    written directly, which costs a tenth of the field's own conversion. For the rows a list
    builds from plain values."""
    if value is not None and value.utcoffset() == timedelta(0) and settings.TIME_ZONE == "UTC":
        return value.isoformat().replace("+00:00", "Z")
    return _DATETIME.to_representation(value)


class IssueCommentSerializer(serializers.ModelSerializer):
    class Meta:
        model = IssueComment
        fields = ["github_id", "author", "body", "body_html", "created_at", "updated_at"]


class IssueFacetVersionSerializer(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()


class IssueGpusSerializer(serializers.Serializer):
    count = serializers.IntegerField(allow_null=True)
    model = serializers.CharField(allow_null=True)


class IssueFacetsSerializer(serializers.Serializer):
    """Facts read from the issue's text (corpus.facets); empty for an issue not read yet."""

    exceptions = serializers.ListField(child=serializers.CharField(), required=False)
    features = serializers.ListField(child=serializers.CharField(), required=False)
    versions = IssueFacetVersionSerializer(many=True, required=False)
    gpus = IssueGpusSerializer(many=True, required=False, help_text="e.g. 8 x A100")
    systems_mentioned = serializers.ListField(child=serializers.CharField(), required=False)


class IssueDetailSerializer(IssueSerializer):
    facets = IssueFacetsSerializer(read_only=True)
    comments = IssueCommentSerializer(many=True, read_only=True)
    linked_fixes = LinkedFixSerializer(many=True, read_only=True)

    class Meta(IssueSerializer.Meta):
        fields = [
            *IssueSerializer.Meta.fields, "body", "body_html", "facets", "comments",
            "linked_fixes",
        ]  # fmt: skip


class RoundSerializer(serializers.ModelSerializer):
    class Meta:
        model = Round
        fields = ["name", "position", "kind", "target_kappa"]


class StudySerializer(serializers.ModelSerializer):
    codebook = serializers.CharField(source="codebook_version.codebook.name", read_only=True)
    codebook_version = serializers.CharField(source="codebook_version.label", read_only=True)
    rounds = RoundSerializer(many=True, read_only=True)
    n_items = serializers.SerializerMethodField()

    class Meta:
        model = Study
        fields = [
            "slug", "name", "description", "codebook", "codebook_version", "k", "blind",
            "status", "rounds", "n_items", "created_at",
        ]  # fmt: skip

    def get_n_items(self, study: Study) -> int:
        # Counted by the query of a list or a study's page (labeling.selectors.
        # study_list_for_user); the routes under a study read it without the count.
        counted = getattr(study, "n_items", None)
        return study.items.count() if counted is None else counted


class StudyDetailSerializer(StudySerializer):
    """A study with how it was set up: `sampling` holds the selection, the sampling rule, the
    seed, the rounds and the counts per repository (labeling.services.setup.sampling_record)."""

    required_dimensions = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        allow_null=True,
        help_text="dimension keys needed to submit; null: as the codebook says",
    )

    class Meta(StudySerializer.Meta):
        fields = [
            *StudySerializer.Meta.fields, "overlap", "preassign", "resolution_rule",
            "screen_in_override", "show_similar_gold", "required_dimensions", "sampling",
        ]  # fmt: skip


class AgreementQuerySerializer(serializers.Serializer):
    dimension = serializers.ListField(child=serializers.SlugField(), required=False)
    round = serializers.CharField(required=False, max_length=100)
    repository = serializers.RegexField(r"^[\w.\-]+/[\w.\-]+$", required=False)
    submitted_after = serializers.DateTimeField(required=False)
    submitted_before = serializers.DateTimeField(required=False)
    level = serializers.IntegerField(required=False, min_value=0, max_value=20)
    weights = serializers.ChoiceField(choices=["linear", "quadratic"], required=False)
    bootstrap = serializers.IntegerField(
        required=False, min_value=0, max_value=MAX_BOOTSTRAP, default=0
    )
    seed = serializers.IntegerField(required=False, min_value=0, default=0)
    min_pair_items = serializers.IntegerField(
        required=False,
        min_value=1,
        max_value=MAX_MIN_PAIR_ITEMS,
        default=DEFAULT_MIN_PAIR_ITEMS,
        help_text="a pair of annotators counts toward the mean kappa from this many shared items",
    )
