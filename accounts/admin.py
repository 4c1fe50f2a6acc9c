"""API tokens in the admin: listed without keys (none is stored), revoked by an action. Tokens
are made by their owners on their account page or over the API, never here."""

from django.contrib import admin

from accounts.models import ApiToken
from accounts.services import api_token_revoke
from common.admin import ReadOnlyAdmin


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = [
        "name", "user", "key_prefix", "created_at", "last_used_at", "expires_at", "revoked_at",
    ]  # fmt: skip
    list_filter = [("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "key_prefix", "user__username"]
    list_select_related = ["user"]
    actions = ["revoke"]

    def has_revoke_permission(self, request) -> bool:
        # Superusers only: a staff user allowed to view tokens must not cut anyone off.
        return request.user.is_superuser

    @admin.action(description="Revoke the selected tokens", permissions=["revoke"])
    def revoke(self, request, queryset) -> None:
        revoked = 0
        for token in queryset.filter(revoked_at__isnull=True).select_related("user"):
            api_token_revoke(token=token, by=request.user)
            revoked += 1
        self.message_user(request, f"Revoked {revoked} token{'s' if revoked != 1 else ''}.")
