"""What the benchmark scripts share: a fresh PostgreSQL database, and a measurement run in a
child process (one database URL per process, memory measured on its own)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench"


def postgres_database(url: str, *, create: bool = True) -> bool:
    """Drop the benchmark's database and, with `create`, make it again, empty. False (and a
    message) when PostgreSQL is not reachable."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=3) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
            if create:
                connection.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as error:
        print(f"PostgreSQL not reachable ({error}); skipping it.")
        return False
    return True


def run_child(script: str, *arguments: str) -> dict:
    """Run `script --child ARGUMENTS...` and return the JSON object its last line prints."""
    output = subprocess.run(
        [sys.executable, script, "--child", *arguments],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def django_setup(database_url: str, **environment: str) -> None:
    """Start Django in this (child) process on the given database, migrated."""
    os.environ.update(
        DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings.test", **environment
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
