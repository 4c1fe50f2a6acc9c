from django.contrib import admin

from common.admin import ReadOnlyAdmin
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension


@admin.register(Codebook)
class CodebookAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]


@admin.register(CodebookVersion)
class CodebookVersionAdmin(admin.ModelAdmin):
    """Versions are read here; they are made by loading a codebook file (`load_codebook`)."""

    list_display = ["codebook", "label", "status", "published_at"]
    list_filter = ["status", "codebook"]
    readonly_fields = ["codebook", "label", "status", "content_hash", "published_at", "metadata"]

    def has_add_permission(self, request) -> bool:
        return False


# A codebook changes by loading a new version of its file, which keeps versions comparable.
@admin.register(Dimension)
class DimensionAdmin(ReadOnlyAdmin):
    list_display = ["key", "name", "version", "multi_label", "required", "position"]
    list_filter = ["version"]


@admin.register(Category)
class CategoryAdmin(ReadOnlyAdmin):
    list_display = ["key", "name", "dimension", "parent", "deprecated"]
    list_filter = ["dimension__version", "dimension"]
    search_fields = ["key", "name", "definition"]
