"""Inviting people into a study: a manager makes an expiring, single-use link for a role; whoever
opens it first sets a username, a name and a password, and is a member with that role.

The token is 32 random bytes, URL-safe; only its SHA-256 is stored (accounts.services'
api_token_hash), so a copy of the database opens no invitation. A manager makes at most
INVITATIONS_PER_HOUR invitations an hour; the acceptance page is throttled per client address
(`invitation_attempt_allowed`: unknown tokens counted), so that tokens cannot be guessed at
speed.
"""

import contextlib
import hashlib
import logging
import secrets
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.contrib.auth.password_validation import validate_password
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from accounts.services import api_token_hash, user_create
from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.access import MANAGER, study_roles
from labeling.models import Invitation, Membership, Study, StudyEvent
from labeling.services.lifecycle import study_event_record
from labeling.services.setup import study_member_join

logger = logging.getLogger(__name__)

INVITATION_DAYS = 7
INVITATIONS_PER_HOUR = 50  # per manager
ATTEMPTS_PER_HOUR = 60  # unknown tokens per client address
INVITABLE_ROLES = tuple(Membership.Role.values)


class InvitationState:
    PENDING = "pending"
    ACCEPTED = "accepted"
    EXPIRED = "expired"
    REVOKED = "revoked"


def invitation_state(invitation: Invitation) -> str:
    if invitation.revoked_at is not None:
        return InvitationState.REVOKED
    if invitation.accepted_at is not None:
        return InvitationState.ACCEPTED
    if invitation.expires_at <= timezone.now():
        return InvitationState.EXPIRED
    return InvitationState.PENDING


@dataclass
class NewInvitation:
    invitation: Invitation
    token: str  # shown once: the link holds it
    mailed: bool


def invitation_path(token: str) -> str:
    return f"/invitations/{token}/"


@transaction.atomic
def invitation_create(
    *, study: Study, by: AbstractBaseUser, role: str, email: str = "", base_url: str = ""
) -> NewInvitation:
    """Make an invitation for `role`, valid INVITATION_DAYS days. With `email` and mail
    configured (EMAIL_URL), the link is mailed to it after the commit; either way it is returned
    once (`base_url` + path), for the manager to copy. Managers only; logged."""
    if MANAGER not in study_roles(study=study, user=by):
        raise PermissionDeniedError("Only the study's managers invite people.")
    if role not in INVITABLE_ROLES:
        raise ApplicationError(
            f"The role is one of {', '.join(INVITABLE_ROLES)}.", {"field": "role"}
        )
    email = (email or "").strip()
    if email and ("@" not in email or len(email) > 254 or any(c.isspace() for c in email)):
        raise ApplicationError("That is not an e-mail address.", {"field": "email"})
    recent = Invitation.objects.filter(
        created_by=by, created_at__gt=timezone.now() - timedelta(hours=1)
    ).count()
    if recent >= INVITATIONS_PER_HOUR:
        raise ApplicationError(
            f"At most {INVITATIONS_PER_HOUR} invitations an hour; try again later.",
            {"limit": INVITATIONS_PER_HOUR},
        )
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        study=study,
        role=role,
        email=email,
        token_hash=api_token_hash(token),
        created_by=by,
        expires_at=timezone.now() + timedelta(days=INVITATION_DAYS),
    )
    study_event_record(
        study=study,
        actor=by,
        action=StudyEvent.Action.INVITED,
        details={"invitation": invitation.pk, "role": role, "email": email},
    )
    mailed = bool(email and settings.EMAIL_URL)
    if mailed:
        link = base_url + invitation_path(token)
        transaction.on_commit(lambda: _mail(study=study, role=role, email=email, link=link))
    return NewInvitation(invitation=invitation, token=token, mailed=mailed)


def _mail(*, study: Study, role: str, email: str, link: str) -> None:
    send_mail(
        subject=f"You are invited to {study.name} on IssueCoder",
        message=(
            f"You are invited to the study {study.name} as {role}.\n\n"
            f"Open this link within {INVITATION_DAYS} days to choose a username and a password; "
            f"it works once:\n\n{link}\n"
        ),
        from_email=None,
        recipient_list=[email],
    )


@transaction.atomic
def invitation_revoke(*, invitation: Invitation, by: AbstractBaseUser) -> Invitation:
    """Withdraw a pending invitation: its link opens nothing after. Managers only; logged."""
    invitation = (
        Invitation.objects.select_for_update().select_related("study").get(pk=invitation.pk)
    )
    if MANAGER not in study_roles(study=invitation.study, user=by):
        raise PermissionDeniedError("Only the study's managers revoke invitations.")
    if invitation_state(invitation) != InvitationState.PENDING:
        raise ApplicationError(f"This invitation is {invitation_state(invitation)} already.")
    invitation.revoked_at = timezone.now()
    invitation.save(update_fields=["revoked_at"])
    study_event_record(
        study=invitation.study,
        actor=by,
        action=StudyEvent.Action.INVITATION_REVOKED,
        details={"invitation": invitation.pk, "role": invitation.role},
    )
    return invitation


def invitation_get_by_token(*, token: str) -> Invitation | None:
    """The invitation of a token, in whatever state, or None."""
    if not token or len(token) > 100:
        return None
    return (
        Invitation.objects.select_related("study").filter(token_hash=api_token_hash(token)).first()
    )


def _guess_key(client_address: str) -> str:
    return f"invitation-guess:{hashlib.sha256(client_address.encode()).hexdigest()}"


def invitation_attempt_allowed(*, client_address: str | None) -> bool:
    """False once this client gave ATTEMPTS_PER_HOUR unknown tokens within the hour (what
    guessing looks like; `invitation_guess_record` counts them)."""
    if not client_address:
        return True
    if (cache.get(_guess_key(client_address)) or 0) >= ATTEMPTS_PER_HOUR:
        logger.warning("invitation refused: %s unknown tokens an hour", ATTEMPTS_PER_HOUR)
        return False
    return True


def invitation_guess_record(*, client_address: str | None) -> None:
    """Count an unknown token given by this client, for an hour from the first."""
    if not client_address:
        return
    key = _guess_key(client_address)
    cache.add(key, 0, timeout=60 * 60)
    # Expired in between, or the cache is down: not counted rather than refused.
    with contextlib.suppress(ValueError):
        cache.incr(key)


@transaction.atomic
def invitation_accept(
    *, token: str, username: str, password: str, first_name: str = "", last_name: str = ""
) -> tuple[AbstractBaseUser, Study]:
    """Use an invitation: create the account (names by `common.names`, the password by Django's
    validators), give it the invited role, and mark the invitation used. Refused, and nothing
    made, when the link is unknown, used, revoked or expired, or anything is wrong."""
    invitation = _pending_locked(token)
    user = user_create(
        username=username, first_name=first_name, last_name=last_name, is_active=True
    )
    try:
        validate_password(password, user=user)
    except ValidationError as error:
        raise ApplicationError(" ".join(error.messages), {"field": "password"}) from None
    user.set_password(password)
    user.save(update_fields=["password"])
    return user, _join(invitation, user)


@transaction.atomic
def invitation_join(*, token: str, user: AbstractBaseUser) -> Invitation:
    """Use an invitation with an account one has (signed in, by password or single sign-on):
    give it the invited role and mark the invitation used; the invitation, used. Refused, and
    nothing changed, as `invitation_accept` refuses, and when the account holds that role in the
    study already."""
    invitation = _pending_locked(token)
    if Membership.objects.filter(study=invitation.study, user=user, role=invitation.role).exists():
        raise ApplicationError(
            f"You are {invitation.get_role_display().lower()} of this study already; the "
            "invitation is left for someone else.",
            {"state": "member"},
        )
    _join(invitation, user)
    return invitation


def _pending_locked(token: str) -> Invitation:
    """The pending invitation of this token, its row locked; refused otherwise, saying why."""
    found = invitation_get_by_token(token=token)
    if found is None:
        raise ApplicationError("This invitation link is not valid.", {"state": "unknown"})
    invitation = Invitation.objects.select_for_update().select_related("study").get(pk=found.pk)
    state = invitation_state(invitation)
    if state != InvitationState.PENDING:
        raise ApplicationError(
            {
                InvitationState.ACCEPTED: "This invitation was used already: sign in instead.",
                InvitationState.EXPIRED: "This invitation has expired: ask for a new one.",
                InvitationState.REVOKED: "This invitation was withdrawn.",
            }[state],
            {"state": state},
        )
    return invitation


def _join(invitation: Invitation, user: AbstractBaseUser) -> Study:
    study = invitation.study
    study_member_join(study=study, user=user, role=invitation.role, by=user)
    invitation.accepted_at = timezone.now()
    invitation.accepted_by = user
    invitation.save(update_fields=["accepted_at", "accepted_by"])
    study_event_record(
        study=study,
        actor=user,
        action=StudyEvent.Action.INVITATION_ACCEPTED,
        details={"invitation": invitation.pk, "role": invitation.role},
    )
    return study
