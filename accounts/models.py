"""Personal API tokens. Only a hash of each key is stored: the key is shown once, when it is
made, and a copy of the database holds nothing that authenticates."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

MAX_TOKEN_NAME = 100
KEY_PREFIX_LENGTH = 8


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> "ApiTokenQuerySet":
        """Tokens that authenticate now: not revoked and not expired."""
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=MAX_TOKEN_NAME, help_text="what the token is for")
    key_prefix = models.CharField(
        max_length=KEY_PREFIX_LENGTH, help_text="the key's first characters, to recognise it"
    )
    key_hash = models.CharField(max_length=64, unique=True, help_text="SHA-256 of the key, hex")
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.key_prefix}…)"

    @property
    def is_active(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()
