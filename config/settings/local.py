"""The embedded default: one machine, SQLite, no other service required.

When REDIS_URL is unset, Celery tasks run inline in the process that queues them
(CELERY_TASK_ALWAYS_EAGER). That is a deliberate mode of the embedded default only, so that a new
user can sync a repository without starting Redis and a worker; production settings refuse to
start without a broker instead of silently doing the same.
"""

from .base import *  # noqa: F403
from .base import EMAIL_URL, REDIS_URL, env

# Off by default: the embedded default is the app people label in, not only a developer's. On
# (DEBUG=true, while developing), Django shows its error pages with the settings, and keeps
# and formats every query's SQL, which on SQLite costs a query more each: a quarter to a
# third of a request's time.
DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env("SECRET_KEY", default="local-development-only-not-secret")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost", "[::1]"])

DEMO_ALLOWED = True  # manage.py demo: its accounts are for this machine only
CELERY_TASK_ALWAYS_EAGER = not REDIS_URL
CELERY_TASK_EAGER_PROPAGATES = True

# Without EMAIL_URL, mails (a password reset link) are printed in the terminal of runserver.
if not EMAIL_URL:
    EMAIL_BACKEND = "django.core.mail.backends.console.EmailBackend"
    PASSWORD_RESET_ENABLED = True

# Static files straight from the apps; `collectstatic` is a production step.
STATIC_ROOT = None
WHITENOISE_USE_FINDERS = True

# The built documentation site (`make docs`) at /docs/, as production can with DOCS_SERVE.
DOCS_SERVE = env.bool("DOCS_SERVE", default=True)
