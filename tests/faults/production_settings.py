"""The production settings for the gunicorn of fault tests, with one change: static files come
from the apps, as in the test settings, instead of a `collectstatic` manifest (most of a minute
to build, and not what these tests are about)."""

from config.settings.production import *  # noqa: F403
from config.settings.production import STORAGES

STORAGES = {
    **STORAGES,
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True
