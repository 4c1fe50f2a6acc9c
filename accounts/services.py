"""Writes of people and API tokens: create a user (their names checked by one rule), create a
token (its key is returned once and never stored), revoke one, note its use."""

import hashlib
import secrets
from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from accounts.models import KEY_PREFIX_LENGTH, MAX_TOKEN_NAME, ApiToken
from common.exceptions import ApplicationError, PermissionDeniedError
from common.names import InvalidName, NameKind, name_check

# Recognisable to secret scanners (and people) as an IssueCoder key.
KEY_PREFIX = "ic_"
MAX_ACTIVE_TOKENS = 20
# last_used_at is written at most this often per token: a busy client would otherwise write a
# row on every request.
LAST_USED_PRECISION = timedelta(minutes=1)


def api_token_hash(key: str) -> str:
    """The stored form of a key: its SHA-256, hex. Looking a key up by its hash compares no
    secret byte by byte, so the lookup leaks no timing about stored keys."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def user_create(
    *, username: str, first_name: str = "", last_name: str = "", is_active: bool = False
) -> AbstractBaseUser:
    """A new user without a usable password (inactive by default: a manager activates them
    and they set a password), their names checked and normalised by `common.names`.
    ApplicationError names the field when a name is refused or the username is taken."""
    checked = {}
    for field, value, kind in (
        ("username", username, NameKind.USERNAME),
        ("first_name", first_name, NameKind.DISPLAY_NAME),
        ("last_name", last_name, NameKind.DISPLAY_NAME),
    ):
        try:
            checked[field] = name_check(value, kind) if value or field == "username" else ""
        except InvalidName as error:
            raise ApplicationError(f"The {error}.", extra={"field": field}) from None
    username = checked["username"]
    User = get_user_model()
    if User.objects.filter(username=username).exists():
        raise ApplicationError(
            f"A user called {username!r} exists already.", extra={"field": "username"}
        )
    user = User(**checked, is_active=is_active)
    user.set_unusable_password()
    user.save()
    return user


def _clean_name(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ApplicationError("Give the token a name (what it is for).", extra={"field": "name"})
    if len(name) > MAX_TOKEN_NAME:
        raise ApplicationError(
            f"A token's name has at most {MAX_TOKEN_NAME} characters.", extra={"field": "name"}
        )
    if "\x00" in name:
        raise ApplicationError("A token's name cannot contain NUL characters.")
    return name


def api_token_create(
    *, user: AbstractBaseUser, name: str, expires_at: datetime | None = None
) -> tuple[ApiToken, str]:
    """A new token of the user and its key, in plain text for this once.

    At most MAX_ACTIVE_TOKENS active tokens a user; `expires_at` lies in the future."""
    name = _clean_name(name)
    now = timezone.now()
    if expires_at is not None:
        if timezone.is_naive(expires_at):
            raise ApplicationError("The expiry needs a time zone.", extra={"field": "expires_at"})
        if expires_at <= now:
            raise ApplicationError("The expiry lies in the past.", extra={"field": "expires_at"})
    if not user.is_active:
        raise PermissionDeniedError("An inactive user cannot make tokens.")
    with transaction.atomic():
        # The user's row is locked so that two requests at once cannot pass the limit together.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if ApiToken.objects.filter(user=user).active().count() >= MAX_ACTIVE_TOKENS:
            raise ApplicationError(
                f"You have {MAX_ACTIVE_TOKENS} active tokens, the most a user may have: revoke "
                "one you no longer use first.",
                extra={"limit": MAX_ACTIVE_TOKENS},
            )
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        token = ApiToken.objects.create(
            user=user,
            name=name,
            key_prefix=key[:KEY_PREFIX_LENGTH],
            key_hash=api_token_hash(key),
            created_at=now,
            expires_at=expires_at,
        )
    return token, key


def api_token_revoke(*, token: ApiToken, by: AbstractBaseUser) -> ApiToken:
    """Revoke a token: its owner may, and a superuser (from the admin) may revoke anyone's.
    Revoking a revoked token changes nothing (it keeps the first revocation time)."""
    if token.user_id != by.pk and not by.is_superuser:
        raise PermissionDeniedError("You may revoke only your own tokens.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
    return token


def api_token_touch(*, token: ApiToken) -> None:
    """Note that the token was used now, unless that was noted less than a minute ago (one
    conditional UPDATE, so concurrent requests do not each write)."""
    now = timezone.now()
    if token.last_used_at is not None and token.last_used_at > now - LAST_USED_PRECISION:
        return
    ApiToken.objects.filter(pk=token.pk).exclude(last_used_at__gt=now - LAST_USED_PRECISION).update(
        last_used_at=now
    )
    token.last_used_at = now


def user_names_change(*, user: AbstractBaseUser, first_name: str, last_name: str) -> None:
    """Change one's display name, checked and normalised by `common.names`."""
    checked = {}
    for field, value in (("first_name", first_name), ("last_name", last_name)):
        try:
            checked[field] = name_check(value, NameKind.DISPLAY_NAME) if value else ""
        except InvalidName as error:
            raise ApplicationError(f"The {error}.", extra={"field": field}) from None
    user.first_name, user.last_name = checked["first_name"], checked["last_name"]
    user.save(update_fields=["first_name", "last_name"])
