"""Reads of API tokens: a user's tokens, and the token a key stands for."""

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet

from accounts.models import ApiToken
from accounts.services import api_token_hash

# No key we make or migrate is longer; a longer header is refused before it is hashed.
MAX_KEY_LENGTH = 200


def api_token_list_for_user(*, user: AbstractBaseUser) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first, revoked and expired ones included."""
    return ApiToken.objects.filter(user=user).order_by("-created_at", "-id")


def api_token_get_for_user(*, user: AbstractBaseUser, token_id: int) -> ApiToken | None:
    """One of the user's own tokens, or None (another user's token is None too)."""
    if not 0 < token_id < 2**63:
        return None
    return api_token_list_for_user(user=user).filter(pk=token_id).first()


def api_token_for_key(*, key: str) -> ApiToken | None:
    """The active token of this key, with its user, or None: an unknown, revoked or expired
    key, or one whose user is inactive."""
    if not key or len(key) > MAX_KEY_LENGTH:
        return None
    token = (
        ApiToken.objects.active()
        .select_related("user")
        .filter(key_hash=api_token_hash(key))
        .first()
    )
    if token is None or not token.user.is_active:
        return None
    return token
