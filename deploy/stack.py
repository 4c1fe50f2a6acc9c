"""Run the production stack of docker-compose.yml as local processes, without Docker.

    python deploy/stack.py check   # the plan: each app service's command, and check --deploy
    python deploy/stack.py up      # run it until Ctrl-C or SIGTERM

The compose file stays the one source of the commands: this script reads it, takes the services
built from this repository (migrate, web, worker, beat; PostgreSQL and Redis are the machine's
own, given by DATABASE_URL and REDIS_URL) and runs exactly their `command:` lists, with the
services' environment, their env file and the production settings. As the image does, it first
collects the static files (the Dockerfile's build step); services that others wait for with
`service_completed_successfully` (migrate) run to their end before the rest start in the order
of `depends_on`. `up` then waits for /health/ to answer 200, prints each process's output with
its service's name (and into RUN_DIR/<service>.log), and stops every process on Ctrl-C or
SIGTERM: SIGTERM first, SIGKILL after --stop-timeout seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

ROOT = Path(__file__).resolve().parent.parent
COLLECTSTATIC = ["python", "manage.py", "collectstatic", "--noinput"]
# compose's variable syntax: $$, $NAME, ${NAME}, ${NAME:-default}, ${NAME-default},
# ${NAME:?error}, ${NAME?error} (defaults and messages are taken literally).
VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|(?P<plain>[A-Za-z_][A-Za-z0-9_]*)"
    r"|\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<operator>:?[-?])(?P<argument>[^}]*))?\})"
)


class StackError(Exception):
    """The stack cannot start or stopped by itself; the message says why."""


def interpolate(value: str, variables: Mapping[str, str]) -> str:
    """A value of the compose file with its variables replaced as `docker compose` would."""

    def replace(match: re.Match) -> str:
        if match["escaped"]:
            return "$"
        name = match["plain"] or match["name"]
        operator, argument = match["operator"], match["argument"] or ""
        current = variables.get(name)
        missing = current is None or (
            operator is not None and operator.startswith(":") and not current
        )
        if operator and operator.endswith("?") and missing:
            raise StackError(f"{name}: {argument or 'must be set'}")
        if operator and operator.endswith("-") and missing:
            return argument
        return current or ""

    return VARIABLE.sub(replace, value)


def env_file_read(path: Path) -> dict[str, str]:
    """KEY=VALUE lines of an env file (comments, blank lines, `export ` and quotes allowed)."""
    values: dict[str, str] = {}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, separator, value = line.removeprefix("export ").partition("=")
        if not separator or not key.strip():
            raise StackError(f"{path}:{number}: expected KEY=VALUE")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        values[key.strip()] = value
    return values


@dataclass
class Service:
    name: str
    command: list[str]
    environment: dict[str, Any]
    env_file: str | None
    depends_on: list[str]
    one_shot: bool = False
    process: subprocess.Popen | None = field(default=None, repr=False)


def app_services(compose: dict[str, Any]) -> list[Service]:
    """The services built from this repository, in an order that respects `depends_on`."""
    definitions = compose.get("services") or {}
    built = {name: spec for name, spec in definitions.items() if "build" in spec}
    services: dict[str, Service] = {}
    for name, spec in built.items():
        command = spec.get("command")
        if not isinstance(command, list) or not command:
            raise StackError(f"service {name}: give it a `command:` list")
        depends_on = spec.get("depends_on") or {}
        env_file = spec.get("env_file")
        if isinstance(env_file, list):
            env_file = env_file[0] if env_file else None
        services[name] = Service(
            name=name,
            command=[str(part) for part in command],
            environment=dict(spec.get("environment") or {}),
            env_file=env_file,
            depends_on=[other for other in depends_on if other in built],
        )
    for spec in built.values():
        for other, condition in (spec.get("depends_on") or {}).items():
            if other in services and (condition or {}).get("condition") == (
                "service_completed_successfully"
            ):
                services[other].one_shot = True

    ordered: list[Service] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if any(service.name == name for service in ordered):
            return
        if name in visiting:
            raise StackError(f"depends_on has a cycle through {name}")
        visiting.add(name)
        for other in services[name].depends_on:
            visit(other)
        visiting.discard(name)
        ordered.append(services[name])

    for name in services:
        visit(name)
    return ordered


def executable(command: list[str]) -> list[str]:
    """`python` is this interpreter; other programs come from its environment's bin folder
    (gunicorn and celery of the virtual environment), else from PATH."""
    program, *arguments = command
    if program == "python":
        return [sys.executable, *arguments]
    beside = Path(sys.executable).parent / program
    found = str(beside) if beside.exists() else shutil.which(program)
    if found is None:
        raise StackError(f"{program} is not installed")
    return [found, *arguments]


def probe_host(allowed_hosts: str) -> str:
    """A Host header Django accepts: the first usable entry of ALLOWED_HOSTS."""
    for host in (part.strip() for part in allowed_hosts.split(",")):
        if host and host != "*":
            return host.lstrip(".")
    return "localhost"


class Stack:
    def __init__(self, arguments: argparse.Namespace) -> None:
        self.arguments = arguments
        self.compose_file = Path(arguments.compose_file).resolve()
        compose = yaml.safe_load(self.compose_file.read_text())
        self.services = app_services(compose)
        if not self.services:
            raise StackError(f"{self.compose_file} has no service with `build:`")
        self.run_dir = Path(arguments.run_dir or tempfile.mkdtemp(prefix="issuecoder-stack-"))
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.stopping = threading.Event()
        self.output_lock = threading.Lock()
        self.pumps: list[threading.Thread] = []
        self.static: subprocess.Popen | None = None
        self.environment = self._environment()

    # ------------------------------------------------------------------ environment

    def _env_file(self) -> dict[str, str]:
        if self.arguments.env_file:
            path = Path(self.arguments.env_file)
        else:
            names = {service.env_file for service in self.services if service.env_file}
            if not names:
                return {}
            path = self.compose_file.parent / sorted(names)[0]
        if not path.exists():
            raise StackError(f"{path} is missing: copy .env.example to it and fill it in")
        return env_file_read(path)

    def _environment(self) -> dict[str, dict[str, str]]:
        """Each service's environment: this shell's, then the env file, then the service's
        `environment:`, then what points the processes at this machine."""
        from_file = self._env_file()
        variables = {**os.environ, **from_file}
        database_url = self.arguments.database_url or os.environ.get("DATABASE_URL")
        redis_url = self.arguments.redis_url or os.environ.get("REDIS_URL")
        if not database_url or not redis_url:
            raise StackError("give the machine's database and broker: DATABASE_URL and REDIS_URL")
        local = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "GUNICORN_BIND": f"{self.arguments.host}:{self.arguments.port}",
            "CELERY_BEAT_SCHEDULE_FILENAME": str(self.run_dir / "celerybeat-schedule"),
            "PYTHONUNBUFFERED": "1",
        }
        environments = {}
        for service in self.services:
            declared = {
                key: interpolate(str(value), variables)
                for key, value in service.environment.items()
                if key not in local  # the compose network's host names mean nothing here
            }
            environments[service.name] = {**os.environ, **from_file, **declared, **local}
        return environments

    # ------------------------------------------------------------------ processes

    def say(self, message: str) -> None:
        with self.output_lock:
            print(f"{'stack':<8}| {message}", flush=True)

    def _pump(self, name: str, stream: TextIO, log: TextIO) -> None:
        for line in stream:
            log.write(line)
            log.flush()
            with self.output_lock:
                sys.stdout.write(f"{name:<8}| {line}")
                sys.stdout.flush()
        log.close()

    def start(self, name: str, command: list[str], environment: dict[str, str]) -> subprocess.Popen:
        # A session of its own: Ctrl-C in the terminal reaches this script only, which then
        # stops each process once, in order (a second SIGINT would make Celery quit at once).
        process = subprocess.Popen(  # noqa: S603 - the compose file's own commands
            executable(command),
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
            start_new_session=True,
        )
        log = (self.run_dir / f"{name}.log").open("a")
        pump = threading.Thread(target=self._pump, args=(name, process.stdout, log), daemon=True)
        pump.start()
        self.pumps.append(pump)
        self.say(f"{name} started (pid {process.pid}): {' '.join(command)}")
        return process

    def wait_for_exit(self, name: str, process: subprocess.Popen) -> int:
        while process.poll() is None:
            if self.stopping.wait(0.2):
                raise StackError("stopped while starting")
        return process.returncode

    def _terminate(self, name: str, process: subprocess.Popen) -> int | None:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(self.arguments.stop_timeout)
            except subprocess.TimeoutExpired:
                self.say(f"{name} did not stop within {self.arguments.stop_timeout} s: killed")
        # Whatever the process left behind in its session (pool processes) goes with it.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        self.say(f"{name} stopped (pid {process.pid}, exit {process.returncode})")
        return process.returncode

    def wait_healthy(self) -> None:
        host = "127.0.0.1" if self.arguments.host in ("0.0.0.0", "") else self.arguments.host  # noqa: S104
        web_environment = self.environment.get("web") or next(iter(self.environment.values()))
        header = probe_host(web_environment.get("ALLOWED_HOSTS", ""))
        deadline = time.monotonic() + self.arguments.health_timeout
        last = "no answer"
        while time.monotonic() < deadline:
            self._check_running()
            try:
                connection = http.client.HTTPConnection(host, self.arguments.port, timeout=5)
                connection.request("GET", "/health/", headers={"Host": header})
                response = connection.getresponse()
                body = response.read().decode(errors="replace")
                connection.close()
                if response.status == 200:
                    self.say(f"healthy: {body}")
                    return
                last = f"{response.status} {body}"
            except OSError as error:
                last = type(error).__name__
            if self.stopping.wait(0.5):
                raise StackError("stopped while starting")
        raise StackError(
            f"/health/ did not answer 200 within {self.arguments.health_timeout} s: {last}"
        )

    def _check_running(self) -> None:
        for service in self.services:
            process = service.process
            if process is not None and not service.one_shot and process.poll() is not None:
                raise StackError(f"{service.name} exited by itself (exit {process.returncode})")

    # ------------------------------------------------------------------ commands

    def plan(self) -> None:
        self.say(f"compose file {self.compose_file}, logs in {self.run_dir}")
        self.say(f"build step: {' '.join(COLLECTSTATIC)}")
        for service in self.services:
            kind = "runs to its end" if service.one_shot else "keeps running"
            self.say(f"{service.name} ({kind}): {' '.join(service.command)}")

    def check(self) -> int:
        self.plan()
        first = self.services[0].name
        result = subprocess.run(  # noqa: S603
            executable(["python", "manage.py", "check", "--deploy", "--fail-level", "WARNING"]),
            cwd=ROOT,
            env=self.environment[first],
            check=False,
        )
        return result.returncode

    def up(self) -> int:
        for received in (signal.SIGINT, signal.SIGTERM):
            signal.signal(received, lambda number, frame: self.stopping.set())
        self.plan()
        try:
            first = self.environment[self.services[0].name]
            # Beside the one-shot services: it needs no database, they need no static files.
            if not self.arguments.skip_collectstatic:
                self.static = self.start("static", COLLECTSTATIC, first)
            for service in (s for s in self.services if s.one_shot):
                service.process = self.start(
                    service.name, service.command, self.environment[service.name]
                )
                if self.wait_for_exit(service.name, service.process) != 0:
                    raise StackError(f"{service.name} failed (exit {service.process.returncode})")
            if self.static is not None and self.wait_for_exit("static", self.static) != 0:
                raise StackError(f"collectstatic failed (exit {self.static.returncode})")
            for service in (s for s in self.services if not s.one_shot):
                service.process = self.start(
                    service.name, service.command, self.environment[service.name]
                )
            if any(service.name == "web" for service in self.services):
                self.wait_healthy()
            self.say(f"up: http://{self.arguments.host}:{self.arguments.port}/ (Ctrl-C stops it)")
            while not self.stopping.wait(0.5):
                self._check_running()
            self.say("stopping")
            return 0 if self.stop() else 1
        except StackError as error:
            self.say(f"error: {error}")
            self.stop()
            return 1

    def stop(self) -> bool:
        """Stop the running services, the last started first; True if each exited cleanly."""
        clean = True
        if self.static is not None and self.static.poll() is None:
            self._terminate("static", self.static)
        for service in reversed(self.services):
            if service.one_shot and service.process is not None and service.process.poll() is None:
                self._terminate(service.name, service.process)
            elif service.process is not None and not service.one_shot:
                if service.process.poll() is not None:
                    clean = False
                    self.say(
                        f"{service.name} had exited already (exit {service.process.returncode})"
                    )
                    continue
                clean = self._terminate(service.name, service.process) == 0 and clean
        for pump in self.pumps:
            pump.join(timeout=5)
        self.say("stopped")
        return clean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "check"])
    parser.add_argument("--compose-file", default=str(ROOT / "docker-compose.yml"))
    parser.add_argument(
        "--env-file", help="instead of the services' env_file (.env beside the compose file)"
    )
    parser.add_argument("--database-url", help="default: $DATABASE_URL")
    parser.add_argument("--redis-url", help="default: $REDIS_URL")
    parser.add_argument("--host", default="127.0.0.1", help="where gunicorn listens")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument(
        "--run-dir", help="logs and beat's schedule file; default: a new temp folder"
    )
    parser.add_argument(
        "--skip-collectstatic", action="store_true", help="STATIC_ROOT is collected already"
    )
    parser.add_argument("--health-timeout", type=float, default=120.0)
    parser.add_argument("--stop-timeout", type=float, default=30.0)
    arguments = parser.parse_args(argv)
    try:
        stack = Stack(arguments)
    except StackError as error:
        print(f"stack: {error}", file=sys.stderr)
        return 2
    return stack.up() if arguments.action == "up" else stack.check()


if __name__ == "__main__":
    sys.exit(main())
