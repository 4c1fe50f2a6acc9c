"""A database that cannot be reached answers 503 with Retry-After, not a 500.

While PostgreSQL restarts, fails over or refuses connections, a request's query raises
OperationalError (or InterfaceError on a connection closed under it). That is an outage, not a
bug: clients and proxies should try again shortly, and the API keeps its one error shape. With
ATOMIC_REQUESTS the request's transaction is rolled back, so nothing half-written stays; once
the database is back, the next request reconnects (CONN_HEALTH_CHECKS drops a dead persistent
connection before use).

The page is plain HTML built here, not a template: rendering one would ask the database for
the user again.
"""

import logging
import sys
from collections.abc import Callable

from django.core.signals import got_request_exception
from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
OUTAGE_ERRORS = (OperationalError, InterfaceError)
MESSAGE = "The database cannot be reached just now. Please try again in a few seconds."
PAGE = (
    "<!doctype html><html lang=en><head><meta charset=utf-8>"
    "<title>Back in a moment - IssueCoder</title></head>"
    f"<body><h1>Back in a moment</h1><p>{MESSAGE} Nothing you sent was half-saved.</p>"
    "</body></html>"
)


def outage_response(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"error": {"code": "service_unavailable", "message": MESSAGE, "details": {}}},
            status=503,
        )
    else:
        response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


def _note_outage(sender: object, request: HttpRequest | None = None, **kwargs: object) -> None:
    """Mark a request whose error came from another middleware (a session saved after the
    view): Django turns those into a 500 before `process_exception` could see them."""
    error = sys.exc_info()[1]
    if request is not None and isinstance(error, OUTAGE_ERRORS):
        request.database_outage = True  # type: ignore[attr-defined]


class DatabaseOutageMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response
        got_request_exception.connect(_note_outage, dispatch_uid="common.outage")

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code == 500 and getattr(request, "database_outage", False):
            return outage_response(request)
        return response

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, OUTAGE_ERRORS):
            return None
        # One line per failed request, without the traceback: an outage under load would
        # otherwise bury the log in identical stacks.
        logger.warning(
            "database unavailable, %s %s answered 503: %s: %s",
            request.method,
            request.path,
            type(exception).__name__,
            str(exception).strip().splitlines()[0] if str(exception).strip() else "",
        )
        return outage_response(request)
