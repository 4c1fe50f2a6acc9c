"""The routes of single sign-on: allauth's login and callback views of the two providers, at the
paths allauth gives them, each answering a 404 unless its provider is configured (the settings
are read at each request, so the routes stay the same whatever the configuration).

Starting a sign-in is a POST with the CSRF token (a GET shows a page with that button); both
the start and the return from the provider count against SSO_PER_HOUR per client address. The
login page and the start page may send their form on to the provider: their Content-Security-
Policy allows the configured providers' origins as form targets, and no other page's does.
"""

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from allauth.socialaccount.providers.github import views as github_views
from allauth.socialaccount.providers.openid_connect import views as oidc_views
from django.conf import settings
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import path
from django.views.decorators.cache import never_cache
from requests import RequestException

from accounts.sso import sso_error_response, sso_provider_configured, sso_providers
from common.middleware import client_address

logger = logging.getLogger(__name__)

WINDOW_SECONDS = 60 * 60


def sso_form_targets(response: HttpResponse) -> HttpResponse:
    """Let this page's forms lead to the configured providers (CSP form-action follows the
    redirect of a form's POST): our own origin and theirs."""
    origins = sorted({provider.origin for provider in sso_providers()})
    if origins:
        response._csp_update = {"form-action": origins}  # type: ignore[attr-defined]
    return response


def _allowed(request: HttpRequest) -> bool:
    address = client_address(request) or "unknown"
    key = f"sso:{hashlib.sha256(address.encode()).hexdigest()}"
    cache.add(key, 0, timeout=WINDOW_SECONDS)
    try:
        count = cache.incr(key)
    except ValueError:
        return True
    return count <= settings.SSO_PER_HOUR


def _guarded(key: str, view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @never_cache
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not sso_provider_configured(key, kwargs.get("provider_id")):
            raise Http404("Single sign-on is not configured.")
        if request.method not in ("GET", "POST"):
            return HttpResponse(status=405, headers={"Allow": "GET, POST"})
        if not _allowed(request):
            return sso_error_response(request, "throttled", 429)
        try:
            response = view(request, *args, **kwargs)
        except RequestException as error:
            # The provider's discovery document could not be read to start with (allauth
            # handles a failure later on, in the return, itself).
            logger.warning("SSO provider unreachable: %s", error.__class__.__name__)
            return sso_error_response(request, "unreachable", 502)
        return sso_form_targets(response)

    return guarded


urlpatterns = [
    path(
        "oidc/<str:provider_id>/login/",
        _guarded("openid_connect", oidc_views.login),
        name="openid_connect_login",
    ),
    path(
        "oidc/<str:provider_id>/login/callback/",
        _guarded("openid_connect", oidc_views.callback),
        name="openid_connect_callback",
    ),
    path("github/login/", _guarded("github", github_views.oauth2_login), name="github_login"),
    path(
        "github/login/callback/",
        _guarded("github", github_views.oauth2_callback),
        name="github_callback",
    ),
]
