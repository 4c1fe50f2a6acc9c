from django.contrib import admin


class ReadOnlyAdmin(admin.ModelAdmin):
    """For rows that only services write: the admin shows them and changes nothing."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
