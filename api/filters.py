"""Query filters of the API's lists, documented in the schema by drf-spectacular."""

from django.db.models import Q, QuerySet
from django_filters import rest_framework as filters
from drf_spectacular.utils import extend_schema_field

from corpus.models import Issue


@extend_schema_field(
    {"type": "boolean", "description": "true: pull requests only; false: issues only"}
)
class PullRequestFilter(filters.TypedChoiceFilter):
    """`true` or `false`, and nothing else; a boolean in the schema (drf-spectacular would
    guess a boolean with the choices' strings as its enum, which no value satisfies)."""


class IssueFilter(filters.FilterSet):
    search = filters.CharFilter(
        method="filter_search",
        max_length=500,
        help_text="words that each appear in the title or the body (case-insensitive)",
    )
    labels = filters.CharFilter(
        method="filter_labels",
        max_length=1000,
        help_text="comma-separated GitHub labels the issue carries, all of them (case-insensitive)",
    )

    # A choice, not a BooleanFilter: that one ignores a value it cannot read ("maybe"), and an
    # unknown filter value is a 400 everywhere in the API.
    is_pull_request = PullRequestFilter(
        choices=[("true", "true"), ("false", "false")],
        coerce=lambda value: value == "true",
        help_text="true: pull requests only; false: issues only",
    )

    class Meta:
        model = Issue
        fields = ["repository__owner", "repository__name", "state", "is_pull_request"]

    def filter_search(self, issues: QuerySet[Issue], name: str, value: str) -> QuerySet[Issue]:
        for word in value.split():
            issues = issues.filter(Q(title__icontains=word) | Q(body__icontains=word))
        return issues

    def filter_labels(self, issues: QuerySet[Issue], name: str, value: str) -> QuerySet[Issue]:
        wanted = {label.strip().lower() for label in value.split(",") if label.strip()}
        if not wanted:
            return issues
        # Compared in Python, as corpus.selectors does: a JSON list is queried differently on
        # SQLite and PostgreSQL. One query of ids and labels, over the issues left so far.
        matching = [
            issue_id
            for issue_id, labels in issues.values_list("id", "labels")
            if wanted <= {str(label).lower() for label in labels or []}
        ]
        return issues.filter(id__in=matching)
