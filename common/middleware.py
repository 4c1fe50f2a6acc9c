"""Security headers, the client address and the lockout page of logins (see
docs/operations/security.md) and the request log."""

import ipaddress
import logging
import re
import time
import uuid
from collections.abc import Callable
from html import escape

from csp.constants import SELF, UNSAFE_INLINE
from csp.middleware import CSPMiddleware, PolicyParts
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.utils.functional import empty

from common.log import request_id

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


def client_address(request: HttpRequest) -> str | None:
    """The client's address that login lockouts count by (AXES_CLIENT_IP_CALLABLE): the peer
    (REMOTE_ADDR), or, with TRUSTED_PROXY_COUNT proxies in front, the entry of X-Forwarded-For
    that the outermost proxy appended. DRF's throttles pick the same entry (NUM_PROXIES is that
    count). An entry that is no address (a count above the real number of proxies) gives the
    peer: axes stores the address in an address column."""
    peer = request.META.get("REMOTE_ADDR")
    count = settings.TRUSTED_PROXY_COUNT
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR")
    if not count or not forwarded:
        return peer
    entries = forwarded.split(",")
    entry = entries[-min(count, len(entries))].strip()
    try:
        ipaddress.ip_address(entry)
    except ValueError:
        return peer
    return entry


request_logger = logging.getLogger("issuecoder.request")
# A request id from a proxy is kept only if it is short and plain: it is echoed in a header
# and written to every log line of the request.
REQUEST_ID_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")


class RequestLogMiddleware:
    """One log line per request (static files aside) with its method, path, status, duration,
    user id and request id. The id comes from X-Request-ID when a proxy sends one, is made here
    otherwise, and goes back in the response's X-Request-ID header."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if request.path.startswith(settings.STATIC_URL):
            return self.get_response(request)
        given = request.headers.get("X-Request-ID", "")
        current = given if REQUEST_ID_PATTERN.fullmatch(given) else uuid.uuid4().hex
        token = request_id.set(current)
        started = time.perf_counter()
        try:
            response = self.get_response(request)
        finally:
            request_id.reset(token)
        duration_ms = round((time.perf_counter() - started) * 1000, 1)
        response["X-Request-ID"] = current
        status = response.status_code
        level = (
            logging.ERROR if status >= 500 else logging.WARNING if status >= 400 else logging.INFO
        )
        request_logger.log(
            level,
            "%s %s %s %.1fms",
            request.method,
            request.path,
            status,
            duration_ms,
            extra={
                "method": request.method,
                "path": request.path,
                "status": status,
                "duration_ms": duration_ms,
                "user_id": _user_id(request),
                "request_id": current,
            },
        )
        return response


def _user_id(request: HttpRequest) -> int | None:
    """The id of the user the request was served for, if anything looked the user up. A user
    nobody asked for stays unread: reading it would cost requests that never needed it (a probe,
    a public page) a session and a user query."""
    user = request.__dict__.get("user")
    if user is None or getattr(user, "_wrapped", None) is empty:
        return None
    return user.pk if user.is_authenticated else None
