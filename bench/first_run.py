"""How long `make run` takes until the login page answers 200: on a fresh clone (the first run
creates the virtual environment, installs the requirements and sets up the demo) and again on
the same clone (the start a user sees every day after the first).

    python bench/first_run.py [--source DIR] [--clone DIR] [--port 8790] [--cold-cache] [--keep]

The clone is of the committed HEAD of --source (default: this checkout), in a temporary folder
unless --clone names one (an existing clone is reused as it is, so its first run is not fresh).
It runs with the embedded defaults a newcomer gets: DATABASE_URL and REDIS_URL are not passed
on, so the demo lives in the clone's SQLite file. --cold-cache installs without the package
caches (pip's and uv's), as on a machine that never installed these packages.
"""

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_SECONDS = 900


def session_cpu_seconds(session: int) -> float | None:
    """CPU seconds (user and system) spent so far by the processes of a session, with their
    reaped children: a figure that a busy machine disturbs less than the elapsed time. None
    without Linux's /proc."""
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    total = 0
    found = False
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[3]) == session:
            found = True
            total += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return total / ticks if found else None


def serve_time(
    *, clone: Path, port: int, environment: dict[str, str], log: Path
) -> tuple[float, float | None]:
    """Seconds from `make run` to the first 200 of the login page, and the CPU seconds its
    processes spent until then; the server is stopped then."""
    url = f"http://127.0.0.1:{port}/accounts/login/"
    started = time.monotonic()
    with log.open("wb") as output:
        # Its own process group: make, the install and runserver are stopped together.
        process = subprocess.Popen(
            ["make", "run", f"PORT={port}"],
            cwd=clone,
            env=environment,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        while time.monotonic() - started < TIMEOUT_SECONDS:
            if process.poll() is not None:
                raise SystemExit(f"make run stopped ({process.returncode}); see {log}")
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        return time.monotonic() - started, session_cpu_seconds(process.pid)
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.05)
        raise SystemExit(f"no 200 from {url} within {TIMEOUT_SECONDS} s; see {log}")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=ROOT, help="repository to clone")
    parser.add_argument("--clone", type=Path, help="reuse or make the clone here")
    parser.add_argument("--port", type=int, default=8790)
    parser.add_argument("--cold-cache", action="store_true", help="install without caches")
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    arguments = parser.parse_args()

    clone = arguments.clone or Path(tempfile.mkdtemp(prefix="issuecoder-first-run-")) / "clone"
    fresh = not clone.exists()
    if fresh:
        subprocess.run(["git", "clone", "--quiet", str(arguments.source), str(clone)], check=True)
    environment = {
        name: value
        for name, value in os.environ.items()
        if name not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE", "VIRTUAL_ENV"}
    }
    if arguments.cold_cache:
        environment.update(PIP_NO_CACHE_DIR="1", UV_NO_CACHE="1")

    first = serve_time(
        clone=clone, port=arguments.port, environment=environment, log=clone / "first-run.log"
    )
    second = serve_time(
        clone=clone, port=arguments.port, environment=environment, log=clone / "second-run.log"
    )
    label = "first make run (fresh clone, installs)" if fresh else "first make run (reused clone)"
    for name, (elapsed, cpu) in ((label, first), ("second make run", second)):
        spent = f" ({cpu:.1f} s of CPU)" if cpu is not None else ""
        print(f"{name}: {elapsed:.1f} s to the login page{spent}")
    print(f"clone: {clone}")
    if arguments.clone is None and not arguments.keep:
        shutil.rmtree(clone.parent)


if __name__ == "__main__":
    main()
