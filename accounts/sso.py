"""Single sign-on through django-allauth: the providers configured (accounts.sso_settings), and
the rules allauth follows here (docs/operations/sso.md).

* A first sign-in makes an account at once, with no study role and no usable password; a
  manager adds it to a study. The username comes from the provider and is made unique.
* It signs in to an existing account instead when the provider says that one of the person's
  e-mail addresses is verified and exactly one account has that address (an account's address
  is set by an administrator: nobody sets their own), unless that account is linked to another
  person at the same provider already. The account keeps its password.
* A new account takes the provider's e-mail unless another account has it already.
* A deactivated account cannot sign in; any failure (a state that does not match, a refused
  code, an id_token that does not verify) is a page that says so, and no account is made.
* allauth makes no password account and sends no mail: its signup, password and e-mail pages
  are not routed, and the project's own login, password reset and invitations stay.
"""

import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from allauth.account.adapter import DefaultAccountAdapter
from allauth.core.exceptions import ImmediateHttpResponse
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from allauth.socialaccount.models import SocialAccount, SocialApp, SocialLogin
from allauth.socialaccount.providers.base import AuthProcess
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse

from accounts.sso_settings import OIDC_PROVIDER_ID

logger = logging.getLogger(__name__)

# The backend recorded in the session of an SSO sign-in, as for an invitation's: the session's
# user is then loaded by Django's own backend, which refuses a deactivated account.
SESSION_BACKEND = "django.contrib.auth.backends.ModelBackend"
ERROR_TEMPLATE = "web/sso_error.html"
GITHUB_WEB_URL = "https://github.com"


@dataclass(frozen=True)
class SsoProvider:
    key: str  # allauth's provider: "openid_connect" or "github"
    name: str  # shown on the button: "Sign in with {name}"
    login_url: str  # where the button posts
    origin: str  # where the browser is sent to sign in (the login page's form-action)


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def sso_providers() -> list[SsoProvider]:
    """The providers configured, in the login page's order; none when SSO is off."""
    configured = getattr(settings, "SOCIALACCOUNT_PROVIDERS", {}) or {}
    providers = []
    if oidc := configured.get("openid_connect"):
        app = oidc["APPS"][0]
        providers.append(
            SsoProvider(
                key="openid_connect",
                name=app.get("name") or "single sign-on",
                login_url=reverse(
                    "openid_connect_login", kwargs={"provider_id": app["provider_id"]}
                ),
                origin=_origin(app["settings"]["server_url"]),
            )
        )
    if github := configured.get("github"):
        providers.append(
            SsoProvider(
                key="github",
                name="GitHub",
                login_url=reverse("github_login"),
                origin=_origin(github.get("GITHUB_URL") or GITHUB_WEB_URL),
            )
        )
    return providers


def sso_provider_configured(key: str, provider_id: str | None = None) -> bool:
    """Whether allauth's views of `key` ("openid_connect" with its `provider_id`, "github")
    may answer: only for a provider configured in the settings."""
    configured = (getattr(settings, "SOCIALACCOUNT_PROVIDERS", {}) or {}).get(key)
    if not configured:
        return False
    if key == "openid_connect":
        return provider_id == OIDC_PROVIDER_ID
    return True


def sso_error_response(request: HttpRequest, reason: str, status: int) -> HttpResponse:
    """The page of a sign-in that did not happen: `reason` is "failed", "inactive",
    "throttled" or "unreachable"."""
    return render(request, ERROR_TEMPLATE, {"reason": reason}, status=status)


class AccountAdapter(DefaultAccountAdapter):
    """allauth's account side: no signup of password accounts, no messages of its own."""

    def is_open_for_signup(self, request: HttpRequest) -> bool:
        return False

    def login(self, request: HttpRequest, user: AbstractBaseUser) -> None:
        if not hasattr(user, "backend"):
            user.backend = SESSION_BACKEND  # type: ignore[attr-defined]
        super().login(request, user)

    def respond_user_inactive(self, request: HttpRequest, user: AbstractBaseUser) -> HttpResponse:
        logger.warning("SSO sign-in refused: account %s is deactivated", user.pk)
        return sso_error_response(request, "inactive", 403)

    def add_message(self, *args: Any, **kwargs: Any) -> None:
        """The pages say who is signed in; allauth's "Successfully signed in" is not shown."""


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def list_apps(
        self, request: HttpRequest, provider: str | None = None, client_id: str | None = None
    ) -> list[SocialApp]:
        """The providers of the settings only: a SocialApp row in the database enables none."""
        apps = super().list_apps(request, provider=provider, client_id=client_id)
        return [app for app in apps if app.pk is None]

    def is_open_for_signup(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True

    def is_auto_signup_allowed(self, request: HttpRequest, sociallogin: SocialLogin) -> bool:
        return True

    def on_authentication_error(
        self,
        request: HttpRequest,
        provider: Any,
        error: Any = None,
        exception: Exception | None = None,
        extra_context: dict | None = None,
    ) -> None:
        logger.warning(
            "SSO sign-in failed at %s: %s %s",
            getattr(provider, "id", provider),
            error,
            exception.__class__.__name__ if exception else "",
        )
        raise ImmediateHttpResponse(sso_error_response(request, "failed", 400))

    def pre_social_login(self, request: HttpRequest, sociallogin: SocialLogin) -> None:
        if sociallogin.state.get("process", AuthProcess.LOGIN) != AuthProcess.LOGIN:
            # Connecting a second provider to a signed-in account is not offered.
            raise ImmediateHttpResponse(sso_error_response(request, "failed", 400))
        if sociallogin.is_existing:
            return
        user = _account_by_verified_email(sociallogin)
        if user is not None:
            logger.info(
                "SSO %s linked to account %s by its verified e-mail",
                sociallogin.account.provider,
                user.pk,
            )
            sociallogin.connect(request, user)

    def save_user(
        self, request: HttpRequest, sociallogin: SocialLogin, form: Any = None
    ) -> AbstractBaseUser:
        user = sociallogin.user
        if user.email and get_user_model().objects.filter(email__iexact=user.email).exists():
            user.email = ""
            sociallogin.email_addresses = []
        return super().save_user(request, sociallogin, form)


def _account_by_verified_email(sociallogin: SocialLogin) -> AbstractBaseUser | None:
    """The one account whose e-mail is one the provider verified, not linked to someone else
    at this provider; None otherwise."""
    users = get_user_model().objects
    for address in sociallogin.email_addresses:
        if not address.verified or not address.email:
            continue
        matches = list(users.filter(email__iexact=address.email.strip())[:2])
        if len(matches) != 1:
            continue
        linked_elsewhere = SocialAccount.objects.filter(
            user=matches[0], provider=sociallogin.account.provider
        ).exists()
        if not linked_elsewhere:
            return matches[0]
    return None
