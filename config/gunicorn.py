"""gunicorn settings of the web service: `gunicorn config.wsgi:application -c config/gunicorn.py`.

Every value can be changed from the environment. gunicorn's own log (workers started, timeouts,
errors) goes out in the app's LOG_FORMAT, JSON lines by default; there is no access log, because
RequestLogMiddleware logs each request once, with its user and request id.
"""

import gc
import multiprocessing
import os
import sys
from pathlib import Path

# The gunicorn script's folder is on sys.path, not the project's: common.log lives there.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common.log import logging_config

bind = os.environ.get("GUNICORN_BIND", f"0.0.0.0:{os.environ.get('PORT', '8000')}")
# The usual rule for synchronous workers: two per core, plus one.
workers = int(os.environ.get("WEB_CONCURRENCY", multiprocessing.cpu_count() * 2 + 1))
# A request running longer than this kills its worker: a streamed CSV or JSONL download of a very
# large study (some 350k items and more at 60 s) belongs in an export job.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# A worker replaced after this many requests (with jitter so they do not all restart at once)
# bounds what a slow leak can hold.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "1000"))
max_requests_jitter = max_requests // 10
# The app is imported once, in the master, and the workers fork from it: a replaced worker
# serves at once instead of importing Django again (about 2 s of CPU, during which its
# requests wait; 2 ms a request at 1000 requests a worker), and the workers share that memory.
# No connection is opened at import, so no socket is shared across the fork.
preload_app = os.environ.get("GUNICORN_PRELOAD", "true").lower() in {"1", "true", "yes", "on"}
# Temporary files of requests in memory, not on a container's overlay disk.
worker_tmp_dir = os.environ.get("GUNICORN_WORKER_TMP_DIR", "/dev/shm")  # noqa: S108

accesslog = None
errorlog = "-"
loglevel = os.environ.get("LOG_LEVEL", "INFO").lower()
logconfig_dict = logging_config(
    os.environ.get("LOG_FORMAT", "json"), os.environ.get("LOG_LEVEL", "INFO")
)
# gunicorn's own loggers go to the one handler of the root logger.
logconfig_dict["loggers"].update(
    {
        "gunicorn.error": {"handlers": [], "level": loglevel.upper(), "propagate": True},
        "gunicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
    }
)


def when_ready(server) -> None:
    """In the master, once the app is preloaded and before the workers fork: import the URLconf
    and the views behind it as well (Django does it at each worker's first request, and the
    agreement views bring in scikit-learn), then freeze what is loaded, so that the workers'
    garbage collections no longer walk those objects again and again."""
    if not preload_app:
        return
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (loading it is the point)
    # The agreement module imports scikit-learn at its first kappa: in the master, once for all.
    import sklearn.metrics  # noqa: F401

    gc.collect()
    gc.freeze()
