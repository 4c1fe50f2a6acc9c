"""The one Celery app, configured from Django settings under the CELERY_ namespace."""

import os

from celery import Celery
from celery.signals import setup_logging

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("issuecoder")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@setup_logging.connect
def use_django_logging(**kwargs) -> None:
    """Workers and beat log as the web does (Django's LOGGING: JSON lines in production)
    instead of Celery's own format; a receiver here keeps Celery from configuring logging."""
    from logging.config import dictConfig

    from django.conf import settings

    dictConfig(settings.LOGGING)
