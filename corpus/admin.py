from django.contrib import admin

from common.admin import ReadOnlyAdmin
from corpus.models import Issue, Repository


@admin.register(Repository)
class RepositoryAdmin(ReadOnlyAdmin):
    """Repositories come from imports and syncs (a rename is found by the sync)."""

    list_display = ["owner", "name", "github_id", "renamed_to"]
    search_fields = ["owner", "name"]


@admin.register(Issue)
class IssueAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "title", "state", "is_pull_request", "updated_at"]
    list_filter = ["repository", "state", "is_pull_request"]
    search_fields = ["title"]
    list_select_related = ["repository"]
    exclude = ["raw", "body_html"]
