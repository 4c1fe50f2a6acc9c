"""Settings shared by every environment. Everything that differs between machines comes from
environment variables (see docs/operations/configuration.md)."""

from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

from accounts.sso_settings import sso_providers_config
from common.log import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("SECRET_KEY", default="")
DEBUG = env.bool("DEBUG", default=False)
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=[])
# `manage.py demo` makes a superuser whose password the README prints: only the local and test
# settings allow it, and any other settings module refuses it unless it says otherwise.
DEMO_ALLOWED = False

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "csp",
    "common",
    "accounts",
    "taxonomy",
    "corpus",
    "labeling",
    "ingest",
    "exports",
    "machines",
    "api",
    "web",
    # Single sign-on (accounts/sso.py). Always installed, so that the migrations are the same
    # whatever the configuration; after "web", whose templates replace allauth's.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    "allauth.socialaccount.providers.github",
]

MIDDLEWARE = [
    # First, so that its duration and status cover every other middleware (redirects too).
    "common.middleware.RequestLogMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Pages compressed (WhiteNoise serves static files precompressed). Above every middleware
    # that reads or writes the body, so that it compresses what they leave. BREACH: a page
    # mixes the CSRF token with reflected input (a filter's value, a search), but Django masks
    # the token anew in every response and this middleware pads the gzip header with random
    # bytes ("Heal the Breach"); the session cookie is in no body. Pages gain ~80 % from it.
    "django.middleware.gzip.GZipMiddleware",
    "common.middleware.ContentSecurityPolicyMiddleware",
    "common.middleware.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside the session and auth middleware: a database outage there is a 503 too.
    "common.outage.DatabaseOutageMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # django-allauth's request context (no query); its redirects of /accounts/ are off, since
    # its account pages are not routed.
    "allauth.account.middleware.AccountMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    # After the messages: its page for htmx requests leaves a message for the reload.
    "common.outage.QueueOutageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, so that it turns a lockout flagged by the backend into the 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"),
}
DATABASES["default"]["ATOMIC_REQUESTS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets the web process read while an import or a task writes.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault(
        "init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
    DATABASES["default"]["OPTIONS"].setdefault("transaction_mode", "IMMEDIATE")
    DATABASES["default"]["OPTIONS"].setdefault("timeout", 20)
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and env.bool(
    "DATABASE_PREPARED_STATEMENTS", default=True
):
    # Parameters bound by the server let psycopg prepare a query that a connection runs for the
    # fifth time: PostgreSQL then plans it once, not at every request (the labeling requests
    # run the same few queries all day; planning was half of PostgreSQL's time). Turn it off
    # behind a pooler in transaction mode (PgBouncer without max_prepared_statements).
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault("server_side_binding", True)
    DATABASES["default"]["OPTIONS"].setdefault("prepare_threshold", 5)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# Files the app writes (dataset exports, under exports/). Served only through views that check
# permissions, never under a public URL.
MEDIA_ROOT = env("MEDIA_ROOT", default=str(BASE_DIR / "media"))

# Requests bigger than this are refused before a view sees them; issue bodies of 1 MB still fit.
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024

# Uploaded files, refused before they are read when larger: a dataset file to restore a study
# from, an issue dump to import into a study.
DATASET_UPLOAD_MAX_BYTES = env.int("DATASET_UPLOAD_MAX_BYTES", default=50 * 1024 * 1024)
ISSUE_UPLOAD_MAX_BYTES = env.int("ISSUE_UPLOAD_MAX_BYTES", default=100 * 1024 * 1024)

SESSION_COOKIE_HTTPONLY = True
# Sessions read from the cache and written through to the database: each request saves a
# session query, and a cache flush or a Redis restart only makes sessions be read from the
# database again, never signs anyone out. Production's cache is Redis, shared by every web
# process; the embedded default's is the memory of its one process (runserver), so a sign-out
# reaches every request there too.
SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
CSRF_COOKIE_HTTPONLY = False  # the labeling script reads it to send drafts with htmx/fetch
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"

# The client address that the API throttles and the login lockouts count by
# (docs/operations/security.md): the peer, REMOTE_ADDR, unless this many reverse proxies stand
# in front, each appending the address it saw to X-Forwarded-For; then the address the
# outermost one saw. A client writes what it likes into that header, so without proxies it is
# never read. The former name AXES_PROXY_COUNT is still read.
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=env.int("AXES_PROXY_COUNT", default=0))
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_COUNT must be 0 (no proxy) or more.")

REST_FRAMEWORK = {
    # The token first: DRF answers a request without credentials with the first class's
    # WWW-Authenticate challenge, a 401; session authentication has none, which made it a 403.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",  # throttles wrong tokens; they are a 401
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.PageSizePagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "api.exception_handler.exception_handler",
    # JSON only, refusing too-deep nesting (a 400, not a 500). A form or multipart body is a
    # 415: it cannot carry the nested `answers` of a draft, which were silently dropped.
    "DEFAULT_PARSER_CLASSES": ["api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": [
        "api.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    # DRF's own reading of TRUSTED_PROXY_COUNT (its default, None, trusts the header outright).
    "NUM_PROXIES": TRUSTED_PROXY_COUNT,
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.UserRateThrottle",
        "rest_framework.throttling.AnonRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env("API_USER_RATE", default="10000/hour"),
        "anon": env("API_ANON_RATE", default="60/minute"),
        # Wrong tokens per client address (api.authentication): then 429 until the hour is up.
        "failed_token": env("API_FAILED_TOKEN_RATE", default="20/hour"),
    },
}
# Brute force (see docs/operations/security.md): after AXES_FAILURE_LIMIT failed logins of one
# username from one address, that pair is locked out for AXES_COOLOFF_MINUTES (a 429 page), on
# the login page and the admin's alike. `manage.py axes_reset` unlocks everyone at once.
AXES_ENABLED = True
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=5)
AXES_COOLOFF_TIME = timedelta(minutes=env.int("AXES_COOLOFF_MINUTES", default=15))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "common.middleware.lockout_response"
# The same client address as the API throttles (TRUSTED_PROXY_COUNT): axes' own proxy settings
# need django-ipware, without which it would take REMOTE_ADDR, the proxy's, behind any proxy.
AXES_CLIENT_IP_CALLABLE = "common.middleware.client_address"

# Content-Security-Policy (django-csp): only our own scripts, styles, images and forms. Inline
# style attributes stay allowed (style-src-attr): templates set a category's depth and progress
# bar widths that way; inline <style> and any inline script are refused.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "style-src-attr": ["'unsafe-inline'"],
        "img-src": ["'self'", "data:"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    },
}

SPECTACULAR_SETTINGS = {
    "TITLE": "IssueCoder API",
    "DESCRIPTION": (
        "Collaborative labeling of GitHub issues for empirical studies: everything the pages "
        "do. Sign in (a session) or send a personal API token as `Authorization: Token <key>`; "
        "tokens are made on /account/tokens/ or with POST /api/tokens/ in a signed-in session. "
        "A request without credentials is a 401 with `WWW-Authenticate: Token`. Bodies are "
        "JSON (a form or multipart body is a 415); a scalar of another type than a field's "
        'is read as DRF reads it (42 where a string is expected as "42", "42" where a number '
        'is as 42, 0 or "false" where a boolean is as false). An optional text query '
        "parameter given empty (`?round=`) counts as not given. Lists are paginated (`page` "
        "from 1, `page_size` up to 200); "
        'every error has one shape, `{"error": {"code", "message", "details"}}`, on every '
        "status each operation documents."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI from the installed package, never from a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "IssueStateEnum": "corpus.models.Issue.State",
        "StudyStatusEnum": "labeling.models.Study.Status",
        "CodebookVersionStatusEnum": "taxonomy.models.CodebookVersion.Status",
        "MachineRunStatusEnum": "machines.models.MachineRun.Status",
        # Issue imports share the export jobs' statuses, and their enum keeps its name.
        "ExportJobStatusEnum": "exports.models.ExportJob.Status",
    },
    # Request bodies get components of their own, in which a field that may not be blank says
    # so (minLength 1) and read-only fields are left out.
    "COMPONENT_SPLIT_REQUEST": True,
}

# Mail, which only password reset links use. EMAIL_URL in django-environ's form:
# smtp+tls://smtp.example.org:587 (STARTTLS; a user and password go before an @, percent-encoded
# as in any URL), smtp+ssl://...:465, smtp://..., consolemail://. Without it nothing can be sent,
# so the reset page says it is off (the local settings print mails on the console instead).
EMAIL_URL = env("EMAIL_URL", default="")
if EMAIL_URL:
    vars().update(
        {
            name: value
            for name, value in env.email_url_config(EMAIL_URL).items()
            if value not in (None, "")
        }
    )
PASSWORD_RESET_ENABLED = bool(EMAIL_URL)
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="IssueCoder <noreply@localhost>")
SERVER_EMAIL = DEFAULT_FROM_EMAIL
# A mail server that does not answer fails the reset after this long (the link is not sent; the
# page stays neutral) instead of holding a web worker until gunicorn kills it.
EMAIL_TIMEOUT = 10
# Reset mails per hour, counted per address asked for and per client address (in the cache);
# above either, the page answers as always and nothing is sent.
PASSWORD_RESET_PER_HOUR = 5

# Machine annotators (machines/): requests in flight at once per run, each request's timeout,
# attempts per request (rate limits, server errors and timeouts are retried with backoff), the
# longest wait between attempts, the characters of an issue a prompt carries, and how long a
# worker's lease on a run lasts unrenewed (another worker takes the run over after it).
MACHINES_MAX_IN_FLIGHT = env.int("MACHINES_MAX_IN_FLIGHT", default=8)
MACHINES_REQUEST_TIMEOUT = env.float("MACHINES_REQUEST_TIMEOUT", default=120.0)
MACHINES_MAX_ATTEMPTS = env.int("MACHINES_MAX_ATTEMPTS", default=6)
MACHINES_BACKOFF_SECONDS = env.float("MACHINES_BACKOFF_SECONDS", default=1.0)
MACHINES_MAX_WAIT_SECONDS = env.float("MACHINES_MAX_WAIT_SECONDS", default=60.0)
MACHINES_ISSUE_CHAR_BUDGET = env.int("MACHINES_ISSUE_CHAR_BUDGET", default=12000)
MACHINES_LEASE_SECONDS = env.int("MACHINES_LEASE_SECONDS", default=300)

# Single sign-on through django-allauth (accounts/sso.py, docs/operations/sso.md): off unless a
# provider is configured here. A lab's OpenID Connect provider needs its discovery URL (the
# issuer; /.well-known/openid-configuration is appended), a client id and secret; GitHub a
# client id and secret (GitHub Enterprise: SSO_GITHUB_URL). Providers come from these settings
# only, never from SocialApp rows. Only allauth's social login and callback views are routed:
# its password, signup and e-mail pages are not, the project's own stay.
SSO_OIDC_SERVER_URL = env("SSO_OIDC_SERVER_URL", default="")
SSO_OIDC_CLIENT_ID = env("SSO_OIDC_CLIENT_ID", default="")
SSO_OIDC_CLIENT_SECRET = env("SSO_OIDC_CLIENT_SECRET", default="")
SSO_OIDC_NAME = env("SSO_OIDC_NAME", default="your lab's account")
SSO_GITHUB_CLIENT_ID = env("SSO_GITHUB_CLIENT_ID", default="")
SSO_GITHUB_CLIENT_SECRET = env("SSO_GITHUB_CLIENT_SECRET", default="")
SSO_GITHUB_URL = env("SSO_GITHUB_URL", default="")
# Sign-in starts and returns from a provider per client address and hour (each start opens a
# session); above it, a 429 page until the hour is up.
SSO_PER_HOUR = env.int("SSO_PER_HOUR", default=300)
SOCIALACCOUNT_PROVIDERS = sso_providers_config(
    oidc_server_url=SSO_OIDC_SERVER_URL,
    oidc_client_id=SSO_OIDC_CLIENT_ID,
    oidc_client_secret=SSO_OIDC_CLIENT_SECRET,
    oidc_name=SSO_OIDC_NAME,
    github_client_id=SSO_GITHUB_CLIENT_ID,
    github_client_secret=SSO_GITHUB_CLIENT_SECRET,
    github_url=SSO_GITHUB_URL,
)
ACCOUNT_ADAPTER = "accounts.sso.AccountAdapter"
SOCIALACCOUNT_ADAPTER = "accounts.sso.SocialAccountAdapter"
# A first sign-in makes an account at once (no signup form); the provider's e-mail is taken as
# it is, and nothing is mailed.
SOCIALACCOUNT_AUTO_SIGNUP = True
ACCOUNT_EMAIL_VERIFICATION = "none"
SOCIALACCOUNT_EMAIL_VERIFICATION = "none"
# Linking to an existing account by a verified e-mail is accounts.sso's rule, not allauth's
# (which would also wipe that account's password): see docs/operations/sso.md.
SOCIALACCOUNT_EMAIL_AUTHENTICATION = False
SOCIALACCOUNT_EMAIL_AUTHENTICATION_AUTO_CONNECT = False
# Two accounts may share an address (Django's users may); a new SSO account leaves the e-mail
# empty when another account has it (accounts.sso).
ACCOUNT_UNIQUE_EMAIL = False
# Starting a sign-in is a POST with the CSRF token; a GET shows a page with that button.
SOCIALACCOUNT_LOGIN_ON_GET = False
# The provider's tokens are not kept: sign-in only, no calls on the user's behalf.
SOCIALACCOUNT_STORE_TOKENS = False
SOCIALACCOUNT_REQUESTS_TIMEOUT = 10

# Celery: JSON only, bounded task time, broker from REDIS_URL.
REDIS_URL = env("REDIS_URL", default="")
CELERY_BROKER_URL = REDIS_URL or None
CELERY_RESULT_BACKEND = REDIS_URL or None
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 55 * 60
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TIMEZONE = TIME_ZONE

# The queue of dataset export tasks (tests give their worker a queue of its own).
EXPORTS_QUEUE = env("EXPORTS_QUEUE", default="celery")
# A running export silent for this long lost its worker and is queued again; a queued one that
# no worker took within the timeout too (see docs/operations/scaling.md). A chunk of the
# export takes well under a second, so the lease is generous.
EXPORT_LEASE_SECONDS = env.int("EXPORT_LEASE_SECONDS", default=120)
EXPORT_QUEUED_TIMEOUT_SECONDS = env.int("EXPORT_QUEUED_TIMEOUT_SECONDS", default=60 * 60)
# Items read (and progress recorded) at a time by an export job; 0: the exporter's own.
EXPORT_CHUNK_SIZE = env.int("EXPORT_CHUNK_SIZE", default=0)

# The documentation site (docs/, built by `make docs` into DOCS_ROOT). The app's links to it
# (the agreement page's methods links) start with DOCS_URL. The app serves the built site itself
# under /docs/ when DOCS_SERVE is on, which by default follows DEBUG; otherwise set DOCS_URL to
# where the site is published.
DOCS_URL = env("DOCS_URL", default="/docs/")
DOCS_ROOT = env("DOCS_ROOT", default=str(BASE_DIR / "site"))
DOCS_SERVE = env.bool("DOCS_SERVE", default=None)

GITHUB_TOKEN = env("GITHUB_TOKEN", default="")
GITHUB_API_URL = env("GITHUB_API_URL", default="https://api.github.com")

# Logs: one line a record on stderr, plain text here and JSON lines in production (LOG_FORMAT).
LOG_FORMAT = env("LOG_FORMAT", default="text")
LOG_LEVEL = env("LOG_LEVEL", default="INFO")
LOGGING = logging_config(LOG_FORMAT, LOG_LEVEL)

# GitHub ingestion (see docs/guides/researcher/github.md).
# Queue of the ingest tasks; tests give each session a queue of its own.
INGEST_QUEUE = env("INGEST_QUEUE", default="celery")
# Issues per list page (GitHub allows at most 100).
INGEST_PER_PAGE = env.int("INGEST_PER_PAGE", default=100)
# A run that has not reported progress for this long counts as lost (its worker died).
INGEST_LEASE_SECONDS = env.int("INGEST_LEASE_SECONDS", default=300)
# A queued run that no worker took within this time counts as lost too (a message lost with a
# broker, no worker running); it is generous because runs of other sources may be ahead of it.
INGEST_QUEUED_TIMEOUT_SECONDS = env.int("INGEST_QUEUED_TIMEOUT_SECONDS", default=60 * 60)
# A sync request (the button, beat's tick when the source is due) sends the task of a queued run
# again when no worker took it this long: its message may have gone with a restarted broker.
INGEST_RESEND_SECONDS = env.int("INGEST_RESEND_SECONDS", default=5 * 60)
# Each sync lists again from this long before the newest stored update: GitHub's list is
# eventually consistent, so an update can show up a little after its timestamp.
INGEST_OVERLAP_SECONDS = env.int("INGEST_OVERLAP_SECONDS", default=60)
# How often a source's stored issues are checked against a full listing, which is what finds
# issues deleted or transferred away since they were stored (an incremental listing cannot).
INGEST_RECONCILE_HOURS = env.int("INGEST_RECONCILE_HOURS", default=24)
# Task-level retries of transient GitHub errors (5xx, timeouts), on top of the client's own.
INGEST_MAX_RETRIES = env.int("INGEST_MAX_RETRIES", default=6)
INGEST_RETRY_BACKOFF_SECONDS = env.int("INGEST_RETRY_BACKOFF_SECONDS", default=5)
INGEST_RETRY_BACKOFF_MAX_SECONDS = env.int("INGEST_RETRY_BACKOFF_MAX_SECONDS", default=300)
# One execution of a sync stops after this long (at a page boundary) and queues the rest, so
# a first sync of a large repository stays under CELERY_TASK_SOFT_TIME_LIMIT.
INGEST_EXECUTION_SECONDS = env.int("INGEST_EXECUTION_SECONDS", default=30 * 60)

# Celery beat with its default PersistentScheduler: one static entry. Per-source intervals live
# in the database and sync_due_sources reads them every minute, so sources are added, changed
# and paused without restarting beat and without a database scheduler.
CELERY_BEAT_SCHEDULE = {
    "sync-due-sources": {
        "task": "ingest.tasks.sync_due_sources",
        "schedule": 60.0,
        # A tick nobody ran within its minute is superseded by the next one.
        "options": {"queue": INGEST_QUEUE, "expires": 55},
    },
    # Sync runs whose worker died (a run left "running"), checked twice a lease (at most every
    # minute): the sync goes on in a new run, and the lost one records why it stopped.
    "recover-sync-runs": {
        "task": "ingest.tasks.recover_sync_runs",
        "schedule": float(min(60, max(1, INGEST_LEASE_SECONDS // 2))),
        "options": {"queue": INGEST_QUEUE, "expires": 55},
    },
    # Issue imports whose message or worker was lost, checked as often.
    "recover-issue-imports": {
        "task": "ingest.tasks.recover_issue_imports",
        "schedule": float(min(60, max(1, INGEST_LEASE_SECONDS // 2))),
        "options": {"queue": INGEST_QUEUE, "expires": 55},
    },
    # Uploaded issue dumps whose job never committed (the request rolled back), once an hour.
    "sweep-issue-upload-files": {
        "task": "ingest.tasks.sweep_issue_upload_files",
        "schedule": 60.0 * 60,
        "options": {"queue": INGEST_QUEUE, "expires": 55 * 60},
    },
    # Export jobs whose worker died, checked twice a lease (at most every minute).
    "recover-export-jobs": {
        "task": "exports.tasks.recover_export_jobs",
        "schedule": float(min(60, max(1, EXPORT_LEASE_SECONDS // 2))),
        "options": {"queue": EXPORTS_QUEUE, "expires": 55},
    },
}
# Redis redelivers a message not acknowledged within this time. A sync runs at most
# CELERY_TASK_TIME_LIMIT, and a rate-limit wait (a message with an eta) lasts at most an hour,
# so the default of one hour would hand a long sync to a second worker while the first still
# runs. Runs are leased in the database, so a redelivery is harmless anyway, just wasted.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 2 * 60 * 60}
# Names of enums in the API schema: the ingest models add more fields named "state" and
# "status", and without names drf-spectacular falls back to hashed ones.
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"] = {
    **SPECTACULAR_SETTINGS.get("ENUM_NAME_OVERRIDES", {}),
    "SourceStateEnum": "ingest.models.Source.State",
    "StudyFollowStateEnum": "ingest.models.StudyFollow.State",
    "SyncRunStatusEnum": "ingest.models.SyncRun.Status",
    "SyncRunTriggerEnum": "ingest.models.SyncRun.Trigger",
    # Their neighbours of the same field name, which would otherwise get hashed names.
    "IssueStateEnum": "corpus.models.Issue.State",
    "CodebookVersionStatusEnum": "taxonomy.models.CodebookVersion.Status",
}
