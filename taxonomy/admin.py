from django.contrib import admin

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


@admin.register(Dimension)
class DimensionAdmin(admin.ModelAdmin):
    list_display = ["key", "name", "version", "multi_label", "required", "position"]
    list_filter = ["version"]

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None or not obj.version.is_published


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["key", "name", "dimension", "parent", "deprecated"]
    list_filter = ["dimension__version", "dimension"]
    search_fields = ["key", "name", "definition"]

    def has_change_permission(self, request, obj=None) -> bool:
        return obj is None or not obj.dimension.version.is_published
