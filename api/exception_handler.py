"""One error shape for the whole API: {"error": {"code", "message", "details"}}.

`exception_handler` gives it to everything a DRF view raises. The rest is answered by Django
before or after a view runs: a path no route matches, a body over DATA_UPLOAD_MAX_MEMORY_SIZE,
a server error. Django's handlers for those (handler400, 403, 404 and 500 in config/urls.py)
are `bad_request`, `permission_denied`, `page_not_found` and `server_error` here, which answer
the same shape under /api/ and leave the pages' HTML as Django makes it everywhere else.
"""

from typing import Any

from django.conf import settings
from django.core.exceptions import (
    PermissionDenied,
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError

API_PREFIX = "/api/"


class ErrorBodySerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    details = serializers.JSONField()


class ErrorSerializer(serializers.Serializer):
    """The API's one error shape."""

    error = ErrorBodySerializer()


def _shape(code: str, message: str, details: Any, http_status: int) -> Response:
    return Response(
        {"error": {"code": code, "message": message, "details": details}}, status=http_status
    )


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ConflictError):
        # A closed study is a lasting state, not a stale version: its own code says so.
        code = "study_closed" if exc.extra.get("study_status") == "closed" else "conflict"
        return _shape(code, exc.message, exc.extra, status.HTTP_409_CONFLICT)
    if isinstance(exc, PermissionDeniedError):
        return _shape("permission_denied", exc.message, exc.extra, status.HTTP_403_FORBIDDEN)
    if isinstance(exc, ApplicationError):
        return _shape("invalid", exc.message, exc.extra, status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        message, details = "The request is not valid.", response.data
    else:
        detail = response.data.get("detail", "") if isinstance(response.data, dict) else ""
        message, details = str(detail), {}
    code = exc.default_code if isinstance(exc, exceptions.APIException) else "error"
    response.data = {"error": {"code": code, "message": message, "details": details}}
    return response


# Django's own error handlers (config/urls.py)


def _is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


def _json_error(code: str, message: str, http_status: int) -> JsonResponse:
    return JsonResponse(
        {"error": {"code": code, "message": message, "details": {}}}, status=http_status
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A request Django refuses before a view can (a body over DATA_UPLOAD_MAX_MEMORY_SIZE, too
    many fields, a host not allowed)."""
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return _json_error(
            "request_too_large",
            f"The request body is larger than {limit:,} bytes, the most the API takes.",
            status.HTTP_400_BAD_REQUEST,
        )
    if isinstance(exception, TooManyFieldsSent | TooManyFilesSent):
        return _json_error(
            "too_many_fields", "The request has too many fields.", status.HTTP_400_BAD_REQUEST
        )
    return _json_error("bad_request", "The request is not valid.", status.HTTP_400_BAD_REQUEST)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not _is_api(request):
        return defaults.permission_denied(request, exception)
    return _json_error(
        "permission_denied",
        "You do not have permission to perform this action.",
        status.HTTP_403_FORBIDDEN,
    )


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """No route matches the path (an id that is no number, a misspelt route)."""
    if not _is_api(request):
        return defaults.page_not_found(request, exception)
    return _json_error("not_found", "Not found.", status.HTTP_404_NOT_FOUND)


def server_error(request: HttpRequest) -> HttpResponse:
    if not _is_api(request):
        return defaults.server_error(request)
    return _json_error(
        "server_error",
        "The server failed to answer this request; the error has been logged.",
        status.HTTP_500_INTERNAL_SERVER_ERROR,
    )
