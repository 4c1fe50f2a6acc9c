"""Admin: reading and light corrections. Labels change only through the labeling services, so the
annotation models are read-only here (their history must stay complete)."""

from django.contrib import admin

from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Issue,
    Membership,
    Repository,
    Round,
    Study,
    StudyItem,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Repository)
class RepositoryAdmin(admin.ModelAdmin):
    list_display = ["owner", "name", "github_id", "renamed_to"]
    search_fields = ["owner", "name"]


@admin.register(Issue)
class IssueAdmin(ReadOnlyAdmin):
    list_display = ["__str__", "title", "state", "is_pull_request", "updated_at"]
    list_filter = ["repository", "state", "is_pull_request"]
    search_fields = ["title"]
    list_select_related = ["repository"]
    exclude = ["raw", "body_html"]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]


class RoundInline(admin.TabularInline):
    model = Round
    extra = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "codebook_version", "k", "blind", "status"]
    inlines = [RoundInline, MembershipInline]
    readonly_fields = ["codebook_version"]

    def get_readonly_fields(self, request, obj=None):
        # The codebook version is pinned when the study is made; changing it would orphan labels.
        return ["codebook_version"] if obj else []


@admin.register(StudyItem)
class StudyItemAdmin(ReadOnlyAdmin):
    list_display = ["study", "issue", "round", "status", "changed_upstream_at"]
    list_filter = ["study", "status"]
    list_select_related = ["study", "issue__repository", "round"]


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ["item", "annotator", "status", "submitted_at", "seconds_spent"]
    list_filter = ["status", "item__study"]


@admin.register(Annotation)
class AnnotationAdmin(ReadOnlyAdmin):
    list_display = ["assignment", "dimension", "unsure", "version"]


@admin.register(AnnotationRevision)
class AnnotationRevisionAdmin(ReadOnlyAdmin):
    list_display = ["annotation", "category_keys", "changed_by", "changed_at", "reason"]
