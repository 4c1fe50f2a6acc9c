"""A database or a task queue that cannot be reached answers 503 with Retry-After, not a 500.

While PostgreSQL restarts, fails over or refuses connections, a request's query raises
OperationalError (or InterfaceError on a connection closed under it). That is an outage, not a
bug: clients and proxies should try again shortly, and the API keeps its one error shape. With
ATOMIC_REQUESTS the request's transaction is rolled back, so nothing half-written stays; once
the database is back, the next request reconnects (CONN_HEALTH_CHECKS drops a dead persistent
connection before use).

A request that would queue a task (an export, a sync) asks the broker first (`broker_require`):
without it the job would be recorded as queued while its message never leaves. Reads and
logins do not need Redis at all (see common/cache.py).

The page is plain HTML built here, not a template: rendering one would ask the database for
the user again.
"""

import logging
import sys
from collections.abc import Callable
from html import escape
from typing import Any

from django.conf import settings
from django.contrib import messages
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


# ----------------------------------------------------------------------------- the task queue

BROKER_CHECK_SECONDS = 1.0
QUEUE_RETRY_AFTER_SECONDS = 30


class ServiceUnavailableError(Exception):
    """A service the request needs cannot be reached (the task queue): the API answers 503
    `service_unavailable` with this message, a page says it (QueueOutageMiddleware).

    Not an ApplicationError on purpose: that is the caller's mistake (a 400), which a page may
    show beside the form; this is an outage, and the request, rolled back, may be sent again.
    """

    def __init__(self, message: str, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


def broker_require(*, action: str) -> None:
    """Raise ServiceUnavailableError when tasks go to a broker that does not answer a PING
    within BROKER_CHECK_SECONDS, so that `action` ("the export") is refused before anything is
    written, instead of a job or a run recorded as queued whose message never leaves (the
    tasks are sent after commit, where a failure can no longer undo the request). Inline tasks
    (the embedded default) need no broker."""
    from common.health import health_broker

    if settings.CELERY_TASK_ALWAYS_EAGER or not settings.CELERY_BROKER_URL:
        return
    check = health_broker(timeout=BROKER_CHECK_SECONDS)
    if check["ok"]:
        return
    raise ServiceUnavailableError(
        f"The task queue (Redis) cannot be reached, so {action} was not started and nothing "
        "was saved. Please try again in a few minutes.",
        {"service": "task_queue", "error": check.get("error", "")},
    )


def queue_outage_response(request: HttpRequest, error: ServiceUnavailableError) -> HttpResponse:
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {
                "error": {
                    "code": "service_unavailable",
                    "message": error.message,
                    "details": error.details,
                }
            },
            status=503,
        )
    elif request.headers.get("HX-Request") == "true":
        # htmx swaps no error answer: the page is loaded again and shows the message.
        messages.error(request, error.message, fail_silently=True)
        response = HttpResponse(status=503)
        response["HX-Refresh"] = "true"
    else:
        page = (
            "<!doctype html><html lang=en><head><meta charset=utf-8>"
            "<title>Task queue unavailable - IssueCoder</title></head>"
            f"<body><h1>Task queue unavailable</h1><p>{escape(error.message)}</p>"
            f'<p><a href="{escape(request.path)}">Back</a></p></body></html>'
        )
        response = HttpResponse(page, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(QUEUE_RETRY_AFTER_SECONDS)
    response["Cache-Control"] = "no-store"
    return response


class QueueOutageMiddleware:
    """Turns ServiceUnavailableError into the 503 of `queue_outage_response`. The API's
    exception handler leaves it alone (it is neither an ApplicationError nor DRF's), so it
    reaches here from API views too, after ATOMIC_REQUESTS rolled the request back."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, ServiceUnavailableError):
            return None
        logger.warning(
            "task queue unavailable, %s %s answered 503: %s",
            request.method,
            request.path,
            exception.details.get("error", ""),
        )
        return queue_outage_response(request, exception)
