"""Install pinned requirements into the virtual environment that runs this script, with uv when
it can be had, else with pip.

    .venv/bin/python deploy/install.py requirements.txt [more files ...]

uv installs the same pinned requirements several times faster than pip (a first `make run`
spent most of its time in pip). It comes from the package index itself, pinned below, installed
by pip into the same environment. uv does not read pip's configuration, so the settings pip
would use on this machine (`pip config list`: its files and PIP_* variables) are handed to it:
index, extra indexes, find-links, no-index, constraints, trusted hosts, certificate, timeout.
When uv cannot be installed, or fails, pip installs as before. Only the standard library here:
it runs before anything else is installed.
"""

import os
import re
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata

UV_VERSION = "0.13.9"
# pip's precedence, highest first: PIP_* variables, then the [install] and [global] sections
# of its files (`pip config list` has already merged the files).
SCOPES = (":env:", "install", "global")
# pip option -> uv pip install option; options given several times or space-separated in pip's
# files repeat the flag.
FLAGS = {
    "index-url": "--index-url",
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
}
TRUE_WORDS = {"1", "true", "yes", "on"}
_LINE = re.compile(r"^(?P<scope>[^.]*)\.(?P<key>[^=]+)='(?P<value>.*)'$")


def pip_settings(listing: str) -> dict[str, str]:
    """pip's effective settings out of `pip config list`: option name -> value."""
    found: dict[tuple[str, str], str] = {}
    for line in listing.splitlines():
        if match := _LINE.match(line.strip()):
            found[(match["scope"], match["key"].replace("_", "-"))] = match["value"]
    settings: dict[str, str] = {}
    for scope in reversed(SCOPES):
        settings.update({key: value for (s, key), value in found.items() if s == scope})
    return settings


def uv_arguments(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """The uv flags and environment variables that make uv use what pip would."""
    arguments: list[str] = []
    for option, flag in FLAGS.items():
        for value in settings.get(option, "").split():
            arguments += [flag, value]
    if settings.get("no-index", "").lower() in TRUE_WORDS:
        arguments.append("--no-index")
    # pip picks the best version across all indexes; uv's default stops at the first index
    # that knows the package, which would miss a pin found only on another one.
    arguments += ["--index-strategy", "unsafe-best-match"]
    environment: dict[str, str] = {}
    if cert := settings.get("cert"):
        environment["SSL_CERT_FILE"] = cert
    if client_cert := settings.get("client-cert"):
        environment["SSL_CLIENT_CERT"] = client_cert
    if timeout := settings.get("default-timeout") or settings.get("timeout"):
        environment["UV_HTTP_TIMEOUT"] = timeout
    if proxy := settings.get("proxy"):
        environment.update(HTTP_PROXY=proxy, HTTPS_PROXY=proxy)
    return arguments, environment


def _pip(*arguments: str) -> subprocess.CompletedProcess:
    # This environment's pip with the Makefile's requirement files: no outside input.
    return subprocess.run([sys.executable, "-m", "pip", *arguments], check=False)  # noqa: S603


def _uv_binary() -> str | None:
    """The pinned uv of this environment, installed with pip if missing; None if it cannot be."""
    try:
        installed = metadata.version("uv")
    except metadata.PackageNotFoundError:
        installed = None
    if installed != UV_VERSION and _pip("install", "--quiet", f"uv=={UV_VERSION}").returncode:
        return None
    # uv's own package knows where its binary lies; asked in a child, as it was just installed.
    probe = subprocess.run(
        [sys.executable, "-c", "from uv import find_uv_bin; print(find_uv_bin())"],
        capture_output=True,
        text=True,
        check=False,
    )
    return probe.stdout.strip() or None


def install(requirement_files: Sequence[str]) -> int:
    requirements = [argument for path in requirement_files for argument in ("-r", path)]
    uv = None if os.environ.get("ISSUECODER_INSTALL_WITH_PIP") else _uv_binary()
    if uv is not None:
        listing = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        arguments, environment = uv_arguments(pip_settings(listing))
        # Compiled at install, as pip does: uv leaves it to the first import, which costs every
        # start of the server a second where bytecode is not written (PYTHONDONTWRITEBYTECODE).
        command = [uv, "pip", "install", "--quiet", "--compile-bytecode"]
        command += ["--python", sys.executable, *arguments]
        done = subprocess.run(  # noqa: S603 - the pinned uv, pip's own settings
            [*command, *requirements], env={**os.environ, **environment}, check=False
        )
        if done.returncode == 0:
            return 0
        print(f"uv could not install ({done.returncode}); installing with pip instead.")
    return _pip("install", "--quiet", *requirements).returncode


if __name__ == "__main__":
    sys.exit(install(sys.argv[1:]))
