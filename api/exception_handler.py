"""One error shape for the whole API: {"error": {"code", "message", "details"}}."""

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError


def _shape(code: str, message: str, details: Any, http_status: int) -> Response:
    return Response(
        {"error": {"code": code, "message": message, "details": details}}, status=http_status
    )


def exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, ConflictError):
        return _shape("conflict", exc.message, exc.extra, status.HTTP_409_CONFLICT)
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
