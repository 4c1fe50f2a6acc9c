"""Settings for the test suite: the same database and broker as given by the environment
(SQLite and inline tasks when unset), fast password hashing."""

import os
import tempfile
from pathlib import Path

from .base import *  # noqa: F403
from .base import REDIS_URL, env

SECRET_KEY = env("SECRET_KEY", default="test-only-not-secret")
ALLOWED_HOSTS = ["testserver", "127.0.0.1", "localhost"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
DEMO_ALLOWED = True  # the suite builds its demo study with manage.py demo
PASSWORD_RESET_ENABLED = True  # pytest-django keeps mails in memory (mail.outbox)
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
REST_FRAMEWORK = {**REST_FRAMEWORK, "DEFAULT_THROTTLE_CLASSES": []}  # noqa: F405

# Static files straight from the apps; `collectstatic` is a production step.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True

# SQLite tests use a file, not memory: the browser tests' live server answers from other
# threads, each with its own connection, which an in-memory database cannot share safely.
# One file per test process, so that two runs in one checkout never share it.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": str(Path(tempfile.gettempdir()) / f"issuecoder-test-{os.getpid()}.sqlite3")
    }

# django-axes needs a request for every authenticate() call, and the suite logs in with
# client.login() everywhere: off here, and on in tests/security with override_settings.
AXES_ENABLED = False
# Throttle counts in this process only, never in a Redis that outlives the run.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
# The policy of every environment, plus eval for Playwright: its wait_for_function evaluates its
# expression with eval in the page. tests/browser/test_security_headers.py uses the real policy.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        **CONTENT_SECURITY_POLICY["DIRECTIVES"],  # noqa: F405
        "script-src": ["'self'", "'unsafe-eval'"],
    }
}
