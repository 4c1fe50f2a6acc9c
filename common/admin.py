from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """For rows that only services write: the admin shows them and changes nothing, and deletes
    nothing (no delete page, no "delete selected" action)."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False
