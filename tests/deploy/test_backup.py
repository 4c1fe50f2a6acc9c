"""A backup restored: `manage.py backup` of an instance with a resolved study and an export
file, `manage.py restore_backup` into a fresh PostgreSQL database, and the same instance comes
back (every table's row count, the annotations and gold labels row by row, the agreement
report, the export file's bytes, no migration missing). The dataset files of the backup restore
the study once more with `import_dataset`; a non-empty database is refused and left alone.

Both instances run in processes of their own on databases of their own: the pytest database
lives in a transaction that pg_dump would not see. The dataset round trip itself, in every
format, is tested in tests/exports/test_dataset_restore.py. The embedded default's SQLite
database is backed up and restored too, with SQLite's online backup instead of pg_dump.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from psycopg import sql

from tests.conftest import require_postgres, require_service

# The labels themselves, compared row by row (ids, times and all).
LABEL_TABLES = (
    "labeling_annotation",
    "labeling_annotation_categories",
    "labeling_annotationrevision",
    "labeling_resolution",
    "labeling_resolution_categories",
    "labeling_resolutionrevision",
)


@pytest.fixture
def server():
    """The PostgreSQL server of the settings, and two databases of the test's own on it."""
    require_postgres()
    require_service(
        bool(shutil.which("pg_dump") and shutil.which("pg_restore")),
        "pg_dump and pg_restore",
        "install the PostgreSQL client tools (apt-get install postgresql-client)",
    )
    database = connection.settings_dict
    params = {
        "host": database["HOST"] or "localhost",
        "port": database["PORT"] or 5432,
        "user": database["USER"],
        "password": database["PASSWORD"] or None,
    }
    names = {role: f"{database['NAME']}_backup_{role}" for role in ("source", "restored")}
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
        for name in names.values():
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}"')
    yield params, names
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as admin:
        for name in names.values():
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def database_url(params: dict, name: str) -> str:
    user = quote(params["user"], safe="")
    password = f":{quote(params['password'], safe='')}" if params["password"] else ""
    return f"postgres://{user}{password}@{params['host']}:{params['port']}/{name}"


def app(args: list[str], *, database: str, media: Path, check: bool = True):
    """Run the app (manage.py, or a module with -m) on the given database and MEDIA_ROOT, with
    tasks inline (no broker: an export job runs when it is committed)."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("REDIS_URL", "BACKUP_DIR", "DJANGO_ALLOW_ASYNC_UNSAFE")
    }
    environment.update(
        DATABASE_URL=database, MEDIA_ROOT=str(media), DJANGO_SETTINGS_MODULE="config.settings.test"
    )
    command = [sys.executable, *(args if args[0] == "-m" else ["manage.py", *args])]
    result = subprocess.run(
        command,
        cwd=settings.BASE_DIR,
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )
    if check:
        assert result.returncode == 0, f"{' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result


def last_line(result: subprocess.CompletedProcess) -> dict:
    """The JSON that tests.deploy.backup_instance prints last (logging may come before it)."""
    return json.loads(result.stdout.strip().splitlines()[-1])


def table_counts(params: dict, name: str) -> dict[str, int]:
    with psycopg.connect(dbname=name, **params) as database:
        tables = [
            table
            for (table,) in database.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename"
            )
        ]
        return {
            table: database.execute(
                sql.SQL("SELECT COUNT(*) FROM {}").format(sql.Identifier(table))
            ).fetchone()[0]
            for table in tables
        }


def table_rows(params: dict, name: str, table: str) -> list[tuple]:
    with psycopg.connect(dbname=name, **params) as database:
        query = sql.SQL("SELECT * FROM {} ORDER BY id").format(sql.Identifier(table))
        return database.execute(query).fetchall()


def test_a_backup_restores_the_same_instance_and_its_datasets(server, tmp_path):
    params, names = server
    source = database_url(params, names["source"])
    restored = database_url(params, names["restored"])
    source_media, restored_media = tmp_path / "media-source", tmp_path / "media-restored"
    backups = tmp_path / "backups"

    built = last_line(
        app(["-m", "tests.deploy.backup_instance", "build"], database=source, media=source_media)
    )
    study = built["study"]
    backup_run = app(["backup", "--output", str(backups)], database=source, media=source_media)
    (folder,) = backups.iterdir()
    assert folder.name.startswith("issuecoder-")
    assert "Backup complete" in backup_run.stdout
    assert params["password"] is None or params["password"] not in backup_run.stdout

    manifest = json.loads((folder / "manifest.json").read_text())
    source_counts = table_counts(params, names["source"])
    assert manifest["database"]["vendor"] == "postgresql"
    assert manifest["tables"] == {
        table: count for table, count in source_counts.items() if table != "django_migrations"
    }
    assert manifest["tables"]["labeling_annotation"] > 0
    assert manifest["tables"]["labeling_resolution"] > 0
    assert set(manifest["migrations"]) >= {"labeling", "exports", "corpus", "taxonomy"}
    assert f"media/{built['export_file']}" in manifest["files"]
    (dataset,) = manifest["datasets"]
    assert dataset["study"] == study

    restore_run = app(["restore_backup", str(folder)], database=restored, media=restored_media)
    assert "as in the manifest" in restore_run.stdout, restore_run.stdout

    restored_counts = table_counts(params, names["restored"])
    assert restored_counts == source_counts
    for table in LABEL_TABLES:
        assert table_rows(params, names["restored"], table) == table_rows(
            params, names["source"], table
        ), table
    export_file = Path(built["export_file"])
    assert (restored_media / export_file).read_bytes() == (source_media / export_file).read_bytes()

    # A second restore into the now non-empty database: refused, nothing changed.
    refused = app(
        ["restore_backup", str(folder)], database=restored, media=restored_media, check=False
    )
    assert refused.returncode != 0
    assert "is not empty" in refused.stderr and "nothing was restored" in refused.stderr
    assert table_counts(params, names["restored"]) == restored_counts

    # migrate --check, then the portable backup: the dataset file under a new slug.
    check_restored = ["-m", "tests.deploy.backup_instance", "restored"]
    after = last_line(
        app(
            [*check_restored, str(folder / dataset["file"]), "copy"],
            database=restored,
            media=restored_media,
        )
    )
    assert after["agreement"][study] == built["agreement"][study]
    assert after["agreement"]["copy"] == built["agreement"][study]


def sqlite_tables(path: Path) -> dict[str, list[tuple]]:
    with sqlite3.connect(path) as database:
        names = [
            name
            for (name,) in database.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        return {
            name: database.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall()  # noqa: S608
            for name in names
        }


def test_an_embedded_sqlite_instance_is_backed_up_and_restored_too(tmp_path):
    source, restored = tmp_path / "source.sqlite3", tmp_path / "restored.sqlite3"
    source_media, restored_media = tmp_path / "media-source", tmp_path / "media-restored"
    built = last_line(
        app(
            ["-m", "tests.deploy.backup_instance", "build"],
            database=f"sqlite:///{source}",
            media=source_media,
        )
    )
    app(
        ["backup", "--output", str(tmp_path / "backups")],
        database=f"sqlite:///{source}",
        media=source_media,
    )
    (folder,) = (tmp_path / "backups").iterdir()
    assert json.loads((folder / "manifest.json").read_text())["database"]["vendor"] == "sqlite"

    run = app(
        ["restore_backup", str(folder)], database=f"sqlite:///{restored}", media=restored_media
    )

    assert "as in the manifest" in run.stdout
    # Every table, row by row.
    assert sqlite_tables(restored) == sqlite_tables(source)
    export_file = Path(built["export_file"])
    assert (restored_media / export_file).read_bytes() == (source_media / export_file).read_bytes()
