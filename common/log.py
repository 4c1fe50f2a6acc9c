"""Log configuration shared by Django, gunicorn and Celery: JSON lines or plain text.

Only the standard library here: settings and the gunicorn config file import it before Django
is set up. One JSON object per record holds time, level, logger and message, plus whatever a
record carries as `extra` (the request line's method, path, status, ...) and the id of the
request being served, so that every line a request causes can be found by that id.
"""

import logging
from contextvars import ContextVar
from typing import Any

LOG_FORMATS = ("json", "text")

# The id of the request this thread or task is serving, set by RequestLogMiddleware.
request_id: ContextVar[str | None] = ContextVar("request_id", default=None)


class RequestIdFilter(logging.Filter):
    """Adds the current request's id to every record logged while a request is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = request_id.get()
        if current is not None and not hasattr(record, "request_id"):
            record.request_id = current
        return True


def logging_config(log_format: str, level: str = "INFO") -> dict[str, Any]:
    """A dictConfig that sends every record to stderr, one line each, in the given format."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, not {log_format!r}")
    formatters = {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "{levelname}{name}{message}",
            "style": "{",
            "rename_fields": {"levelname": "level", "name": "logger"},
            # ISO 8601 in UTC under "time"
            "timestamp": "time",
            "json_ensure_ascii": False,
        },
        "text": {"format": "{asctime} {levelname} {name} {message}", "style": "{"},
    }
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_id": {"()": "common.log.RequestIdFilter"}},
        "formatters": {log_format: formatters[log_format]},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": log_format,
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["console"], "level": level},
        "loggers": {
            # Django's own handler would print requests' errors a second time in DEBUG.
            "django": {"handlers": [], "level": level, "propagate": True},
            # Its "Not Found: /x" warnings repeat the request line; errors (with their
            # traceback) stay.
            "django.request": {"handlers": [], "level": "ERROR", "propagate": True},
            # "/app/.env not found" at every start, where settings come from the environment.
            "environ": {"handlers": [], "level": "WARNING", "propagate": True},
            # Each request is logged once, by RequestLogMiddleware (issuecoder.request); the
            # development server's own access lines would say it again.
            "django.server": {"handlers": [], "level": "WARNING", "propagate": True},
        },
    }
