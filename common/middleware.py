"""Security headers and the login lockout page (see README.md, "Security")."""

from collections.abc import Callable
from html import escape

from csp.constants import SELF, UNSAFE_INLINE
from csp.middleware import CSPMiddleware, PolicyParts
from django.http import HttpRequest, HttpResponse, HttpResponseBase

# Browser features no page of IssueCoder uses: denied to the page and to anything it embeds.
PERMISSIONS_POLICY = ", ".join(
    f"{feature}=()"
    for feature in (
        "accelerometer",
        "autoplay",
        "browsing-topics",
        "camera",
        "display-capture",
        "encrypted-media",
        "fullscreen",
        "geolocation",
        "gyroscope",
        "hid",
        "magnetometer",
        "microphone",
        "midi",
        "payment",
        "picture-in-picture",
        "publickey-credentials-get",
        "screen-wake-lock",
        "serial",
        "usb",
        "xr-spatial-tracking",
    )
)

# Views whose third-party page has an inline <script> and <style> we do not control: the
# Swagger UI page of drf-spectacular. It shows the schema only, never user content.
INLINE_ALLOWED_VIEWS = {"api-docs"}


class PermissionsPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", PERMISSIONS_POLICY)
        return response


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, with the policy relaxed for INLINE_ALLOWED_VIEWS only."""

    def get_policy_parts(
        self, request: HttpRequest, response: HttpResponseBase, report_only: bool = False
    ) -> PolicyParts:
        parts = super().get_policy_parts(request, response, report_only)
        match = getattr(request, "resolver_match", None)
        if not report_only and match is not None and match.url_name in INLINE_ALLOWED_VIEWS:
            parts.update = {
                **(parts.update or {}),
                "script-src": [SELF, UNSAFE_INLINE],
                "style-src": [SELF, UNSAFE_INLINE],
            }
        return parts


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None, credentials: dict | None
) -> HttpResponse:
    """django-axes' answer to a locked-out login (AXES_LOCKOUT_CALLABLE): a plain 429 page."""
    from axes.helpers import get_cool_off

    cool_off = get_cool_off(request)
    minutes = max(1, round(cool_off.total_seconds() / 60)) if cool_off else None
    wait = (
        f"Try again in {minutes} minute{'s' if minutes != 1 else ''}, or ask an administrator to "
        "unlock it."
        if minutes
        else "Ask an administrator to unlock it."
    )
    body = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<title>Too many login attempts · IssueCoder</title></head><body><main>"
        "<h1>Too many login attempts</h1>"
        "<p>This account is locked for logins from this address after too many failed "
        f"attempts. {escape(wait)}</p></main></body></html>"
    )
    response = HttpResponse(body, status=429)
    if cool_off:
        response["Retry-After"] = str(int(cool_off.total_seconds()))
    return response
