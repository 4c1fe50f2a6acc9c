"""gunicorn settings of the web service: `gunicorn config.wsgi:application -c config/gunicorn.py`.

Every value can be changed from the environment. gunicorn's own log (workers started, timeouts,
errors) goes out in the app's LOG_FORMAT, JSON lines by default; there is no access log, because
RequestLogMiddleware logs each request once, with its user and request id.
"""

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
# A request running longer than this kills its worker (exports run in Celery, not in requests).
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "60"))
graceful_timeout = int(os.environ.get("GUNICORN_GRACEFUL_TIMEOUT", "30"))
keepalive = int(os.environ.get("GUNICORN_KEEPALIVE", "5"))
# A worker replaced after this many requests (with jitter so they do not all restart at once)
# bounds what a slow leak can hold.
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "1000"))
max_requests_jitter = max_requests // 10
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
