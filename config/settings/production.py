"""Production: every secret and host from the environment; refuses to start without them."""

from django.core.exceptions import ImproperlyConfigured

from common.log import logging_config

from .base import *  # noqa: F403
from .base import ALLOWED_HOSTS, BASE_DIR, LOG_LEVEL, REDIS_URL, SECRET_KEY, env

if not SECRET_KEY or len(SECRET_KEY) < 32 or SECRET_KEY.startswith(("local-", "test-", "change")):
    raise ImproperlyConfigured("SECRET_KEY must be set to a long random value in production.")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("ALLOWED_HOSTS must be set in production.")
if not REDIS_URL:
    raise ImproperlyConfigured("REDIS_URL must be set in production: Celery needs a broker.")

DEBUG = False
CELERY_TASK_ALWAYS_EAGER = False
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=True)
# Health probes (load balancers, container checks) speak plain HTTP to the app itself.
SECURE_REDIRECT_EXEMPT = [r"^health/$"]
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=60 * 60 * 24 * 30)
# Subdomains too, and eligible for the browsers' preload list (which still needs a submission
# at hstspreload.org); turn them off for a host whose subdomains are not all on HTTPS.
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=True)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=True)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# Throttle counts (API, failed tokens) shared by every web process. While Redis cannot be
# reached the cache answers misses (common/cache.py): sessions come from the database and
# throttles let requests through, with a warning in the log, instead of every request a 500.
CACHES = {
    "default": {
        "BACKEND": "common.cache.TolerantRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "issuecoder",
    }
}
# One database connection per web process, kept between requests (opening one costs more than
# most requests), and checked before reuse, so that a database restart costs the next request
# a reconnect rather than an error.
DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=60)  # noqa: F405
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405
# A database host that drops packets makes a request (and the health probe) fail after this
# many seconds instead of hanging a web process until the operating system gives up.
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":  # noqa: F405
    DATABASES["default"].setdefault("OPTIONS", {})  # noqa: F405
    DATABASES["default"]["OPTIONS"].setdefault(  # noqa: F405
        "connect_timeout", env.int("DATABASE_CONNECT_TIMEOUT", default=5)
    )

# Hashed static file names (app.3f2a1b.css), which WhiteNoise serves with a far-future
# Cache-Control: a new release changes the name, so browsers never keep an old file.
STORAGES = {
    **STORAGES,  # noqa: F405
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
STATIC_ROOT = env("STATIC_ROOT", default=str(BASE_DIR / "staticfiles"))

# JSON lines, one object a record, for a log collector (LOG_FORMAT=text for people).
LOG_FORMAT = env("LOG_FORMAT", default="json")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)

# Where Celery beat keeps when each entry last ran (a file of the beat process's own).
CELERY_BEAT_SCHEDULE_FILENAME = env(
    "CELERY_BEAT_SCHEDULE_FILENAME", default=str(BASE_DIR / "celerybeat-schedule")
)
