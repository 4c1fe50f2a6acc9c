import os
import subprocess
import sys

from django.conf import settings


def production_check(**env: str) -> subprocess.CompletedProcess:
    environment = {
        key: value
        for key, value in os.environ.items()
        if key
        not in (
            "SECRET_KEY",
            "ALLOWED_HOSTS",
            "REDIS_URL",
            "DJANGO_SETTINGS_MODULE",
            "DJANGO_ALLOW_ASYNC_UNSAFE",  # set for the browser tests only
        )
    }
    environment.update(DJANGO_SETTINGS_MODULE="config.settings.production", **env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy"],
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = production_check(ALLOWED_HOSTS="example.org", REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_production_refuses_to_start_without_allowed_hosts():
    result = production_check(SECRET_KEY="x" * 50, REDIS_URL="redis://127.0.0.1:6379/0")
    assert result.returncode != 0
    assert "ALLOWED_HOSTS must be set" in result.stderr


def test_production_starts_with_its_settings():
    result = production_check(
        SECRET_KEY="a-real-secret-" + "q" * 40,
        ALLOWED_HOSTS="example.org",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    assert result.returncode == 0, result.stderr
    # `check --deploy` has nothing to say about them: no security warning at all.
    assert "System check identified no issues (0 silenced)." in result.stdout, result.stdout


def test_debug_is_off_by_default():
    from config.settings import base

    assert base.env.bool("DEBUG_NOT_SET_ANYWHERE", default=False) is False
    assert (
        'DEBUG = env.bool("DEBUG", default=False)'
        in (settings.BASE_DIR / "config" / "settings" / "base.py").read_text()
    )


def production_settings(printed: str) -> str:
    """What `print(<printed>)` shows under the production settings, in a process of its own
    (they refuse to load without their environment, so not in this one)."""
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django; django.setup(); from django.conf import settings; print({printed})",
        ],
        cwd=settings.BASE_DIR,
        env={
            **{key: value for key, value in os.environ.items() if key != "LOG_FORMAT"},
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "SECRET_KEY": "a-real-secret-" + "q" * 40,
            "ALLOWED_HOSTS": "example.org",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_production_shares_throttle_counts_through_redis():
    printed = production_settings("settings.CACHES['default']['BACKEND'], settings.AXES_ENABLED")
    assert "common.cache.TolerantRedisCache True" in printed


def test_production_logs_json_lines_and_serves_hashed_static_names():
    printed = production_settings(
        "settings.LOG_FORMAT, settings.LOGGING['handlers']['console']['formatter'], "
        "settings.STORAGES['staticfiles']['BACKEND'], settings.SECURE_REDIRECT_EXEMPT"
    )
    assert printed.split() == [
        "json",
        "json",
        "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "['^health/$']",
    ]
