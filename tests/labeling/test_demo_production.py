"""`manage.py demo` makes a superuser whose password the README prints: the production settings
refuse it, with a clear error and before anything is written."""

import os
import secrets
import sqlite3
import subprocess
import sys

from django.conf import settings


def test_demo_is_refused_under_the_production_settings(tmp_path):
    database = tmp_path / "production.sqlite3"
    result = subprocess.run(
        [sys.executable, "manage.py", "demo"],
        cwd=settings.BASE_DIR,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": secrets.token_urlsafe(40),
            "ALLOWED_HOSTS": "example.org",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            "DATABASE_URL": f"sqlite:///{database}",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "CommandError: demo creates a superuser" in result.stderr, result.stderr
    assert "config.settings.production" in result.stderr
    assert "Traceback" not in result.stderr
    assert "manager-demo" not in result.stdout
    # Nothing migrated, no account made.
    if database.exists():
        with sqlite3.connect(database) as connection:
            assert connection.execute("SELECT name FROM sqlite_master").fetchall() == []
