"""Private servers for fault tests and bench/faults.py: a PostgreSQL cluster and a redis-server
of their own on free ports of 127.0.0.1, which they may stop and restart without touching the
servers everybody else uses. Each is a context manager that removes its process and files even
when the block fails.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

POSTGRES_BIN = Path(os.environ.get("POSTGRES_BIN", "/usr/lib/postgresql/15/bin"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise TimeoutError(f"timed out waiting for {what}")


class PrivateRedis:
    """`redis-server` without persistence: a restart loses every message, as a crashed broker
    without an append-only file does."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "",
             "--appendonly", "no", "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        wait_until(lambda: port_open(self.port), 10, "redis-server")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None

    def restart(self, down_seconds: float = 0.0) -> None:
        """Kill and start again on the same port (empty: nothing was saved)."""
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class PrivatePostgres:
    """A throwaway PostgreSQL cluster (trust authentication, user postgres) on a free port,
    its socket in its own folder. initdb refuses to run as root, so as root the cluster belongs
    to the `postgres` system user and its commands run as that user."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="issuecoder-pg-"))
        self.data = self.folder / "data"
        self.log = self.folder / "postgres.log"

    @staticmethod
    def available() -> bool:
        return (POSTGRES_BIN / "initdb").exists()

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *command: str, timeout: float = 60) -> None:
        prefix: list[str] = []
        if os.geteuid() == 0:
            prefix = ["runuser", "-u", "postgres", "--"]
        subprocess.run(
            [*prefix, *command],
            check=True,
            timeout=timeout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

    def _pg_ctl(self, action: str, *extra: str) -> None:
        self._run(
            str(POSTGRES_BIN / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w",
            "-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c max_connections=100",
            action, *extra,
        )  # fmt: skip

    def start(self) -> None:
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        self._run(
            str(POSTGRES_BIN / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync",
        )  # fmt: skip
        self._pg_ctl("start")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session is cut, then the server starts again."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            with contextlib.suppress(subprocess.SubprocessError):
                self._pg_ctl("stop", "-m", "immediate")

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.folder, ignore_errors=True)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def github_with_issues(owner: str, name: str, count: int):
    """The stand-in GitHub serving one repository of `count` closed issues with a comment."""
    from tests.github_server import FakeGitHub

    github = FakeGitHub()
    github.add_repository(owner, name)
    for number in range(1, count + 1):
        stamp = f"2024-01-{1 + number // 1440:02d}T{number // 60 % 24:02d}:{number % 60:02d}:00Z"
        github.add_issue(
            owner,
            name,
            {"number": number, "title": f"Loss is NaN after step {number}", "state": "closed",
             "created_at": stamp, "updated_at": stamp, "closed_at": stamp, "labels": ["bug"]},
            comments=[{"body": f"Seen on run {number}", "user": "reporter"}],
        )  # fmt: skip
    return github


class ProductionWeb:
    """gunicorn as config/gunicorn.py runs it, with the production settings (static files from
    the apps: tests/faults/production_settings.py) and one worker, on a free port; `env` adds
    to this process's environment (DATABASE_URL, REDIS_URL, ...). Its log, JSON lines, goes to
    `log`. Requests are made as a browser behind a proxy that terminated HTTPS."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        root = Path(__file__).resolve().parents[2]
        inherited = {
            key: value
            for key, value in os.environ.items()
            if key not in ("DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE", "SECRET_KEY")
        }
        with self.log.open("wb") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi:application",
                 "--config", "config/gunicorn.py"],
                cwd=root,
                env={
                    **inherited,
                    "DJANGO_SETTINGS_MODULE": "tests.faults.production_settings",
                    "SECRET_KEY": secrets.token_urlsafe(50),
                    "ALLOWED_HOSTS": "localhost",
                    "GUNICORN_BIND": f"127.0.0.1:{self.port}",
                    "WEB_CONCURRENCY": "1",
                    **self.env,
                },
                stdout=sink,
                stderr=subprocess.STDOUT,
            )  # fmt: skip
        process = self.process
        try:
            wait_until(lambda: port_open(self.port) or process.poll() is not None, 60, "gunicorn")
        except TimeoutError:
            self.stop()
            raise
        if self.process.poll() is not None:
            raise RuntimeError(f"gunicorn exited:\n{self.logs()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
