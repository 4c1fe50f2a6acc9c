"""The production stack of docker-compose.yml, run by deploy/stack.py as local processes.

The end-to-end test starts the compose file's own commands (migrate, gunicorn, a Celery worker
and beat) with the production settings on a PostgreSQL database of its own, created and dropped
here, and a Redis database of its own (db 15 of the session's Redis server, emptied before and
after; STACK_TEST_REDIS_URL chooses another). Needs PostgreSQL and Redis: skipped without them,
failed in CI.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import environ
import pytest
import yaml

from deploy.stack import StackError, app_services, env_file_read, interpolate
from tests.celery_worker import redis_reachable
from tests.conftest import require_service

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
DEADLINE_SECONDS = 180


# ----------------------------------------------------------------------------- the compose file


def test_the_app_services_are_the_ones_built_here_migrate_first():
    services = app_services(COMPOSE)

    assert [service.name for service in services] == ["migrate", "web", "worker", "beat"]
    assert [service.name for service in services if service.one_shot] == ["migrate"]
    web = services[1]
    assert web.command == [
        "gunicorn", "config.wsgi:application", "--config", "config/gunicorn.py",
    ]  # fmt: skip
    assert all(service.environment["DJANGO_SETTINGS_MODULE"] == "config.settings.production"
               for service in services)  # fmt: skip


def test_every_service_has_an_explicit_command_and_web_probes_health():
    for name, spec in COMPOSE["services"].items():
        assert "command" in spec or name == "postgres", name  # postgres: the image's own
    assert "/health/" in " ".join(COMPOSE["services"]["web"]["healthcheck"]["test"])


def test_variables_are_replaced_as_compose_does():
    variables = {"SET": "value", "EMPTY": ""}

    assert interpolate("a-${SET}-$SET-$$HOSTNAME", variables) == "a-value-value-$HOSTNAME"
    assert interpolate("${EMPTY:-fallback}|${EMPTY-fallback}", variables) == "fallback|"
    assert interpolate("${UNSET:-x}", variables) == "x"
    with pytest.raises(StackError, match=r"UNSET: set it in \.env"):
        interpolate("${UNSET:?set it in .env}", variables)


def test_an_env_file_is_read_like_compose(tmp_path):
    path = tmp_path / "env"
    path.write_text("# comment\n\nA=1\nexport B='two words'\nC=\"x=y\"\nEMPTY=\n")

    assert env_file_read(path) == {"A": "1", "B": "two words", "C": "x=y", "EMPTY": ""}
    path.write_text("NOT A PAIR\n")
    with pytest.raises(StackError, match="env:1: expected KEY=VALUE"):
        env_file_read(path)


# ----------------------------------------------------------------------------- the running stack


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stack_redis_url() -> str:
    given = os.environ.get("STACK_TEST_REDIS_URL")
    if given:
        return given
    session = urlsplit(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))
    return urlunsplit((session.scheme, session.netloc, "/15", "", ""))


@pytest.fixture
def fresh_database():
    """A PostgreSQL database of this test's own on the session's server, dropped afterwards."""
    url = os.environ.get("DATABASE_URL", "")
    require_service(
        url.startswith(("postgres://", "postgresql://")),
        "PostgreSQL",
        "set DATABASE_URL=postgres://postgres@127.0.0.1:5432/issuecoder to run this test",
    )
    import psycopg

    config = environ.Env.db_url_config(url)
    name = f"issuecoder_stack_{uuid.uuid4().hex[:10]}"
    server = {
        "host": config["HOST"] or "127.0.0.1",
        "port": config["PORT"] or 5432,
        "user": config["USER"],
        "password": config["PASSWORD"] or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    try:
        admin = psycopg.connect(**server, connect_timeout=5)
    except psycopg.OperationalError as error:
        require_service(False, "PostgreSQL", f"cannot connect to {url}: {error}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        parts = urlsplit(url)
        yield urlunsplit((parts.scheme, parts.netloc, f"/{name}", "", ""))
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def fresh_redis():
    url = stack_redis_url()
    require_service(
        redis_reachable(url), "Redis", "set REDIS_URL=redis://127.0.0.1:6379/0 to run this test"
    )
    import redis

    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


def static_sources_key() -> str:
    """A digest of every static file the apps ship (path, size, time) and the storage."""
    from django.contrib.staticfiles.finders import get_finders

    digest = hashlib.sha256(b"whitenoise.storage.CompressedManifestStaticFilesStorage")
    for finder in get_finders():
        for path, storage in sorted(finder.list([]), key=lambda found: found[0]):
            stat = os.stat(storage.path(path))
            digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def beat_schedule_overdue(path: Path) -> None:
    """Beat's schedule file as a beat that last ran five minutes ago leaves it, so that the
    restarted beat sends its entries at once instead of a minute after it starts."""
    from celery.beat import PersistentScheduler

    from config.celery import app

    scheduler = PersistentScheduler(app=app, schedule_filename=str(path))
    for entry in scheduler.schedule.values():
        entry.last_run_at = datetime.now(UTC) - timedelta(minutes=5)
    scheduler.sync()
    scheduler.close()


def fetch(port: int, method: str, path: str, headers: dict[str, str] | None = None, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, path, body=body, headers={"Host": "localhost", **(headers or {})})
    response = connection.getresponse()
    content = response.read()
    connection.close()
    return response, content


def cookies_set(response) -> dict[str, str]:
    """Each Set-Cookie header by its cookie's name (the whole header, flags included)."""
    return {
        value.split("=", 1)[0]: value
        for key, value in response.getheaders()
        if key.lower() == "set-cookie"
    }


def cookie_value(header: str) -> str:
    return header.split(";", 1)[0].split("=", 1)[1]


def wait_for(predicate, what: str, deadline: float, process: subprocess.Popen, output: Path):
    while time.monotonic() < deadline:
        if predicate():
            return
        if process.poll() is not None:
            pytest.fail(f"the stack exited ({process.returncode}) before {what}:\n{tail(output)}")
        time.sleep(0.5)
    pytest.fail(f"no {what} in time:\n{tail(output)}")


def tail(path: Path, lines: int = 60) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


def json_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")]


def live(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.worker
def test_the_compose_stack_runs_on_this_machine(tmp_path, fresh_database, fresh_redis, request):
    port = free_port()
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    # collectstatic compresses some 1,000 files (most of a minute): collected once per set of
    # static sources and reused, in pytest's cache folder.
    cache = getattr(request.config, "cache", None)  # absent with -p no:cacheprovider
    static_root = Path(cache.mkdir("issuecoder-stack-static")) if cache else tmp_path / "static"
    key = static_sources_key()
    collected = (static_root / ".sources-key").exists() and (
        (static_root / ".sources-key").read_text() == key
    )
    env_file = tmp_path / "stack.env"
    env_file.write_text(
        f"SECRET_KEY={secrets.token_urlsafe(50)}\n"
        "ALLOWED_HOSTS=127.0.0.1,localhost\n"
        f"STATIC_ROOT={static_root}\n"
        f"MEDIA_ROOT={tmp_path / 'media'}\n"
        "WEB_CONCURRENCY=2\n"
    )
    beat_schedule_overdue(run_dir / "celerybeat-schedule")
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY")
    }
    command = [
        sys.executable, "deploy/stack.py", "up", "--env-file", str(env_file),
        "--database-url", fresh_database, "--redis-url", fresh_redis,
        "--port", str(port), "--run-dir", str(run_dir), "--health-timeout", "300",
    ] + (["--skip-collectstatic"] if collected else [])  # fmt: skip
    output = tmp_path / "stack.out"
    started = time.monotonic()
    deadline = started + DEADLINE_SECONDS
    with output.open("w") as sink:
        stack = subprocess.Popen(
            command, cwd=ROOT, env=environment, stdout=sink, stderr=subprocess.STDOUT
        )
    try:
        wait_for(lambda: "stack   | up: " in output.read_text(), "health", deadline, stack, output)
        if not collected:
            (static_root / ".sources-key").write_text(key)
        up_seconds = time.monotonic() - started

        # /health/ on plain HTTP: exempt from the HTTPS redirect, no cookie.
        response, content = fetch(port, "GET", "/health/")
        assert response.status == 200
        health = json.loads(content)
        assert health["status"] == "ok"
        assert health["checks"]["database"]["ok"] and health["checks"]["broker"]["ok"]
        assert not cookies_set(response)

        # Pages over plain HTTP are redirected; behind a proxy that terminated HTTPS they are
        # served with HSTS, the content security policy and secure cookies.
        response, _ = fetch(port, "GET", "/accounts/login/")
        assert response.status == 301
        assert response.getheader("Location") == "https://localhost/accounts/login/"
        https = {"X-Forwarded-Proto": "https"}
        response, content = fetch(port, "GET", "/accounts/login/", https)
        assert response.status == 200
        assert response.getheader("Strict-Transport-Security") == (
            "max-age=2592000; includeSubDomains; preload"
        )
        assert "default-src 'self'" in response.getheader("Content-Security-Policy")
        csrf_cookie = cookies_set(response)["csrftoken"]
        assert "Secure" in csrf_cookie and "SameSite=Lax" in csrf_cookie
        page = content.decode()

        # The stylesheet under its hashed name, from WhiteNoise, cached for ten years.
        stylesheet = re.search(r'href="(/static/web/app\.[0-9a-f]{12}\.css)"', page)
        assert stylesheet, "the login page links the hashed stylesheet"
        response, content = fetch(port, "GET", stylesheet[1], https)
        assert response.status == 200 and b"{" in content
        assert response.getheader("Cache-Control") == "max-age=315360000, public, immutable"

        # A login gives a secure, HTTP-only session cookie; the next page is logged with the
        # user's id under the request id of the response.
        password = secrets.token_urlsafe(16)
        created = subprocess.run(
            [sys.executable, "manage.py", "createsuperuser", "--noinput",
             "--username", "operator", "--email", "operator@example.org"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**environment, **env_file_read(env_file), "DATABASE_URL": fresh_database,
                 "REDIS_URL": fresh_redis, "DJANGO_SETTINGS_MODULE": "config.settings.production",
                 "DJANGO_SUPERUSER_PASSWORD": password},
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)[1]
        response, _ = fetch(
            port,
            "POST",
            "/accounts/login/",
            {
                **https,
                "Origin": "https://localhost",
                "Cookie": f"csrftoken={cookie_value(csrf_cookie)}",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            body=f"csrfmiddlewaretoken={token}&username=operator&password={password}",
        )
        assert response.status == 302, cookies_set(response)
        session_cookie = cookies_set(response)["sessionid"]
        assert "Secure" in session_cookie and "HttpOnly" in session_cookie
        response, _ = fetch(
            port, "GET", "/", {**https, "Cookie": f"sessionid={cookie_value(session_cookie)}"}
        )
        assert response.status == 200
        home_request_id = response.getheader("X-Request-ID")

        # The worker answers a ping on the stack's broker and ran what beat sent at its start.
        from celery import Celery

        pinger = Celery(broker=fresh_redis)
        replies = pinger.control.ping(timeout=5)
        pinger.close()
        assert any("pong" in str(reply) for reply in replies), replies
        wait_for(
            lambda: (
                "ingest.tasks.sync_due_sources" in (run_dir / "worker.log").read_text()
                and "succeeded" in (run_dir / "worker.log").read_text()
            ),
            "task run by the worker",
            deadline,
            stack,
            output,
        )
        beat_lines = json_lines(run_dir / "beat.log")
        assert any(
            line["message"].startswith("Scheduler: Sending due task sync-due-sources")
            for line in beat_lines
        ), beat_lines

        # Logs are JSON lines: gunicorn's own, the requests' and Celery's.
        web_lines = [json.loads(line) for line in (run_dir / "web.log").read_text().splitlines()]
        assert any(line["logger"] == "gunicorn.error" for line in web_lines)
        [home] = [line for line in web_lines if line.get("request_id") == home_request_id]
        assert (home["logger"], home["path"], home["status"]) == ("issuecoder.request", "/", 200)
        assert isinstance(home["user_id"], int)
        assert any(
            line["logger"].startswith("celery") for line in json_lines(run_dir / "worker.log")
        )
        pids = {
            name: int(pid)
            for name, pid in re.findall(
                r"stack +\| (\w+) started \(pid (\d+)\)", output.read_text()
            )
        }
        assert set(pids) >= {"migrate", "web", "worker", "beat"}
        assert all(live(pids[name]) for name in ("web", "worker", "beat"))
    finally:
        stack.send_signal(signal.SIGTERM)
        try:
            stack.wait(90)
        except subprocess.TimeoutExpired:
            stack.kill()
            stack.wait()

    # Stopped cleanly: each service exited 0, no process left, the port free.
    text = output.read_text()
    assert stack.returncode == 0, tail(output)
    for name in ("web", "worker", "beat"):
        assert f"{name} stopped (pid {pids[name]}, exit 0)" in text
        assert not live(pids[name])
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    print(
        f"stack up (health 200) in {up_seconds:.1f} s, "
        f"collectstatic {'skipped' if collected else 'run'}"
    )
