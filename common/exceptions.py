from typing import Any


class ApplicationError(Exception):
    """The one error a service raises for a request that cannot be carried out.

    `message` is meant for people; `extra` carries structured details (a field, line numbers).
    The API turns it into a 400 with one error shape; pages show the message.
    """

    def __init__(self, message: str, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.extra = extra or {}


class PermissionDeniedError(ApplicationError):
    """The user may not do this (the API answers 403)."""


class ConflictError(ApplicationError):
    """The data changed under the caller (a stale version); the API answers 409."""
