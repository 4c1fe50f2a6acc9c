"""Backups of a whole instance (`manage.py backup`) and their restore (`manage.py restore_backup`).

A backup is one folder, `issuecoder-<UTC time>/`, holding:

* the database: `database.dump` (`pg_dump --format=custom`) on PostgreSQL, `database.sqlite3`
  (SQLite's online backup API, consistent while the app writes) on the embedded default;
* `media/`: the files under MEDIA_ROOT (the export jobs' files);
* `datasets/`: each study's dataset as JSONL with every annotator's labels, and its codebook
  file, which `import_dataset` reads on any instance (the portable second backup);
* `manifest.json`: when, the app's version, the latest applied migration per app, the row count
  of every table and the size and SHA-256 of every file above.

On PostgreSQL the dump, the counts, the migration state and the datasets are read in one
snapshot (a repeatable-read transaction whose snapshot pg_dump shares), so the manifest
describes exactly what the dump holds even while people keep labeling. The folder is written
under a hidden name and renamed when complete: a folder with the final name is a whole backup.

A restore goes into an empty database only (unless forced), checks the manifest's shape and
every file against it first (no name may lead out of the backup folder or out of MEDIA_ROOT),
and afterwards counts every table again against the manifest.

Credentials come from the database settings (DATABASE_URL) and reach pg_dump and pg_restore
through their environment, never their command line; no password is ever printed.
"""

import hashlib
import json
import os
import platform
import re
import shutil
import sqlite3
import subprocess
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import django
from django.conf import settings
from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from common.exceptions import ApplicationError
from exports.services import dataset_export_write
from labeling.models import Study
from taxonomy.codebook_file import codebook_spec_export
from taxonomy.selectors import codebook_version_to_spec

MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1
FOLDER_PREFIX = "issuecoder-"
POSTGRES_DUMP = "database.dump"
SQLITE_COPY = "database.sqlite3"
MEDIA = "media"
DATASETS = "datasets"
TOOL_TIMEOUT_SECONDS = 6 * 60 * 60
SHA256_PATTERN = re.compile(r"[0-9a-f]{64}")
CONTROL_CHARACTER = re.compile(r"[\x00-\x1f\x7f]")

Log = Callable[[str], None]


class BackupError(ApplicationError):
    """A backup that cannot be made or restored; the message says why and what to do."""


@dataclass(frozen=True)
class TableCheck:
    table: str
    expected: int | None  # None: the table is not in the backup
    found: int | None  # None: the table is not in the restored database

    @property
    def ok(self) -> bool:
        return self.expected == self.found


# Backup


def backup_create(*, destination: Path, datasets: bool = True, log: Log = print) -> Path:
    """Write a backup folder under `destination` and return it. `datasets=False` leaves out
    the studies' dataset files (the database dump holds them anyway)."""
    vendor = _vendor()
    destination.mkdir(parents=True, exist_ok=True)
    started = datetime.now(UTC)
    name = FOLDER_PREFIX + started.strftime("%Y%m%dT%H%M%SZ")
    final = destination / name
    if final.exists():
        raise BackupError(f"{final} exists already; wait a second and run the backup again.")
    partial = destination / f".{name}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    # The owner's only: a backup holds every account's data (password hashes, sessions).
    partial.mkdir(mode=0o700)
    try:
        log(f"Backing up {_database_label()} to {final}")
        if vendor == "postgresql":
            state, dataset_entries = _postgres_backup(partial, datasets=datasets, log=log)
        else:
            state = _sqlite_backup(partial, log=log)
            dataset_entries = _datasets_write(partial, log=log) if datasets else []
        media_files = _media_copy(Path(settings.MEDIA_ROOT), partial / MEDIA)
        log(f"media: {media_files} files from MEDIA_ROOT")
        manifest = {
            "format": MANIFEST_FORMAT,
            "created_at": started.isoformat().replace("+00:00", "Z"),
            "app": {"name": "issuecoder", "version": _app_version()},
            "django": django.get_version(),
            "python": platform.python_version(),
            "database": state["database"],
            "migrations": state["migrations"],
            "tables": state["tables"],
            "datasets": dataset_entries,
            "files": _checksums(partial),
        }
        (partial / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        partial.rename(final)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    rows = sum(manifest["tables"].values())
    log(
        f"manifest: {len(manifest['tables'])} tables, {rows} rows, "
        f"{len(manifest['files'])} files with their SHA-256"
    )
    log(f"Backup complete: {final}")
    return final


def _postgres_backup(
    folder: Path, *, datasets: bool, log: Log
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pg_dump = _tool("pg_dump")
    # One snapshot for everything: pg_dump joins this transaction's snapshot, and the counts,
    # migrations and datasets are read inside it, so the manifest matches the dump exactly.
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        cursor.execute("SELECT pg_export_snapshot()")
        (snapshot,) = cursor.fetchone()
        dump = folder / POSTGRES_DUMP
        _run(
            [pg_dump, "--format=custom", f"--snapshot={snapshot}", f"--file={dump}"],
            what="pg_dump",
        )
        log(f"database: {POSTGRES_DUMP} ({_size(dump)}, pg_dump custom format)")
        state = _database_state(cursor)
        cursor.execute("SHOW server_version")
        (server_version,) = cursor.fetchone()
        entries = _datasets_write(folder, log=log) if datasets else []
    state["database"] = {
        "vendor": "postgresql",
        "name": connection.settings_dict["NAME"],
        "server_version": server_version,
        "file": POSTGRES_DUMP,
        "tool": _tool_version(pg_dump),
    }
    return state, entries


def _sqlite_backup(folder: Path, *, log: Log) -> dict[str, Any]:
    connection.ensure_connection()
    copy_path = folder / SQLITE_COPY
    copy = sqlite3.connect(copy_path)
    try:
        connection.connection.backup(copy)
        # The source runs in WAL mode; the copy becomes one self-contained file.
        copy.execute("PRAGMA journal_mode=DELETE")
        # Counted on the copy itself, so that the manifest describes exactly the copy.
        state = _database_state(copy.cursor())
    finally:
        copy.close()
    log(f"database: {SQLITE_COPY} ({_size(copy_path)}, SQLite online backup)")
    state["database"] = {
        "vendor": "sqlite",
        "name": Path(connection.settings_dict["NAME"]).name,
        "server_version": sqlite3.sqlite_version,
        "file": SQLITE_COPY,
        "tool": "sqlite3 backup API",
    }
    return state


def _datasets_write(folder: Path, *, log: Log) -> list[dict[str, Any]]:
    """Each study as JSONL with raw labels, and its codebook file: `import_dataset FILE
    --codebook CODEBOOK` restores it on any instance, whatever its database."""
    entries = []
    studies = Study.objects.select_related("codebook_version__codebook").order_by("slug")
    for study in studies:
        (folder / DATASETS).mkdir(exist_ok=True)
        dataset_name = f"{DATASETS}/{study.slug}.jsonl"
        codebook_name = f"{DATASETS}/{study.slug}.codebook.json"
        with (folder / dataset_name).open("wb") as output:
            rows = dataset_export_write(study=study, format="jsonl", output=output, raw=True)
        spec = codebook_version_to_spec(version=study.codebook_version)
        (folder / codebook_name).write_text(codebook_spec_export(spec, "json"))
        entries.append(
            {"study": study.slug, "rows": rows, "file": dataset_name, "codebook": codebook_name}
        )
        log(f"dataset: {dataset_name} ({rows} items, raw labels) and {codebook_name}")
    return entries


def _media_copy(source: Path, target: Path) -> int:
    target.mkdir()
    copied = 0
    if not source.is_dir():
        return copied
    for path in sorted(source.rglob("*")):
        # Links could point anywhere on the machine; the app never writes any.
        if path.is_file() and not path.is_symlink():
            destination = target / path.relative_to(source)
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, destination)
            copied += 1
    return copied


# Restore


def backup_restore(*, source: Path, force: bool = False, log: Log = print) -> list[TableCheck]:
    """Restore the backup folder `source` into the database of the settings (which must be
    empty unless `force`) and its media files into MEDIA_ROOT, then count every table against
    the manifest. Raises BackupError, having changed nothing, when the manifest is not of the
    shape the backup writes, a file name leads out of the backup or out of MEDIA_ROOT, the
    backup is damaged, the database is of another kind or not empty, or a media file would be
    overwritten or cannot be written; raises it too when the counts differ after the restore.
    Everything is checked before the database is touched: a refusal never half-restores."""
    manifest = backup_manifest_read(source)
    vendor = _vendor()
    backup_vendor = manifest["database"]["vendor"]
    if backup_vendor != vendor:
        raise BackupError(
            f"This backup holds a {backup_vendor} database and DATABASE_URL names a {vendor} "
            "one. Restore it into the same kind of database, or move the studies across with "
            f"import_dataset and the files under {DATASETS}/."
        )
    media_root = Path(settings.MEDIA_ROOT)
    files, media_files, outside = _backup_paths(source, media_root, manifest["files"])
    if outside:
        raise BackupError(
            f"The backup {source} names files that lead out of it or out of MEDIA_ROOT "
            "(an absolute name, `..`, a control character or a symbolic link); nothing was "
            f"restored: {', '.join(outside[:5])}"
        )
    damaged = _damaged_files(files, manifest["files"])
    if damaged:
        raise BackupError(
            f"The backup {source} is damaged; nothing was restored. Files missing or not as "
            f"the manifest says: {', '.join(damaged)}"
        )
    log(f"Backup {source.name}: checked {len(manifest['files'])} files against the manifest")
    target = _database_label()
    existing = connection.introspection.table_names(include_views=True)
    if existing and not force:
        fresh = (
            "createdb a new one and point DATABASE_URL at it"
            if vendor == "postgresql"
            else "point DATABASE_URL at a file that does not exist yet"
        )
        raise BackupError(
            f"The database {target} is not empty ({len(existing)} tables, such as "
            f"{', '.join(sorted(existing)[:3])}); nothing was restored. Restore into an empty "
            f"database ({fresh}), or give --force to replace what the backup holds in this one."
        )
    clashes = _media_clashes(media_files, manifest["files"])
    if clashes and not force:
        raise BackupError(
            f"MEDIA_ROOT holds other files under the names of the backup's: "
            f"{', '.join(clashes[:5])}; nothing was restored. Give --force to overwrite them."
        )
    unwritable = _media_unwritable(media_files)
    if unwritable:
        raise BackupError(
            f"These media files cannot be written into MEDIA_ROOT ({media_root}): "
            f"{', '.join(unwritable[:5])}; nothing was restored."
        )
    log(f"Restoring into {target}{' (forced: it was not empty)' if existing else ''}")
    database_file = files[manifest["database"]["file"]]
    if vendor == "postgresql":
        _postgres_restore(database_file, clean=bool(existing))
    else:
        _sqlite_restore(database_file)
    log(f"database: restored from {manifest['database']['file']}")
    for name, destination in media_files.items():
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(files[name], destination)
    log(f"media: {len(media_files)} files into MEDIA_ROOT")
    return _verify(manifest, log=log)


def backup_manifest_read(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except FileNotFoundError as error:
        raise BackupError(f"{folder} is not a backup: it has no {MANIFEST}.") from error
    except (OSError, ValueError) as error:
        raise BackupError(f"Cannot read {path}: {error}") from error
    if not isinstance(manifest, dict):
        raise BackupError(f"{path} is not a backup manifest: it holds no JSON object.")
    if manifest.get("format") != MANIFEST_FORMAT:
        raise BackupError(
            f"{path} is of manifest format {manifest.get('format')!r}; this version of the "
            f"app reads format {MANIFEST_FORMAT}."
        )
    problems = _manifest_problems(manifest)
    if problems:
        raise BackupError(
            f"{path} is not a manifest as `backup` writes it; nothing was restored: "
            f"{'; '.join(problems)}."
        )
    return manifest


def _manifest_problems(manifest: dict[str, Any]) -> list[str]:
    """What keeps `manifest` from the shape `backup_create` writes, as far as a restore reads
    it: a damaged or hand-made manifest is refused here, not by a KeyError halfway through."""

    def mapping_of(key: str, value_type: type, description: str) -> list[str]:
        value = manifest.get(key)
        if not isinstance(value, dict) or not all(
            isinstance(name, str) and type(item) is value_type for name, item in value.items()
        ):
            return [f"`{key}` must be an object of {description}"]
        return []

    problems = []
    database = manifest.get("database")
    if not (
        isinstance(database, dict)
        and isinstance(database.get("vendor"), str)
        and isinstance(database.get("file"), str)
    ):
        problems.append('`database` must be an object with a "vendor" and a "file"')
    files = manifest.get("files")
    if not isinstance(files, dict):
        problems.append("`files` must be an object of file names to their bytes and sha256")
    else:
        wrong = [
            name
            for name, entry in files.items()
            if not (
                isinstance(entry, dict)
                and type(entry.get("bytes")) is int
                and entry["bytes"] >= 0
                and isinstance(entry.get("sha256"), str)
                and SHA256_PATTERN.fullmatch(entry["sha256"])
            )
        ]
        if wrong:
            shown = ", ".join(repr(name) for name in wrong[:5])
            problems.append(f"`files` entries without a size and a SHA-256: {shown}")
        if not problems and database["file"] not in files:
            problems.append(f"the database file {database['file']!r} is not among `files`")
    problems += mapping_of("tables", int, "table names to row counts")
    problems += mapping_of("migrations", str, "app labels to migration names")
    return problems


def _postgres_restore(dump: Path, *, clean: bool) -> None:
    command = [
        _tool("pg_restore"),
        "--no-owner",  # the target's user owns everything, whoever owned it before
        "--no-privileges",  # grants name roles the target server may not have
        "--exit-on-error",
        "--single-transaction",  # a failed restore leaves the database as it was
        "--dbname",
        connection.settings_dict["NAME"],
    ]
    if clean:
        command += ["--clean", "--if-exists"]
    # The restore runs on pg_restore's own connection: close ours so that it holds nothing.
    connection.close()
    _run([*command, dump], what="pg_restore")


def _sqlite_restore(copy_path: Path) -> None:
    connection.ensure_connection()
    source = sqlite3.connect(copy_path)
    try:
        source.backup(connection.connection)
    finally:
        source.close()


def _verify(manifest: dict[str, Any], *, log: Log) -> list[TableCheck]:
    with connection.cursor() as cursor:
        state = _database_state(cursor)
    expected: dict[str, int] = manifest["tables"]
    found: dict[str, int] = state["tables"]
    checks = [
        TableCheck(table, expected.get(table), found.get(table))
        for table in sorted(expected.keys() | found.keys())
    ]
    width = max((len(check.table) for check in checks), default=5)
    log(f"{'table':<{width}}  {'backup':>8}  {'restored':>8}")
    for check in checks:
        counts = f"{_count(check.expected):>8}  {_count(check.found):>8}"
        log(f"{check.table:<{width}}  {counts}  {'ok' if check.ok else 'DIFFERS'}")
    wrong = [check.table for check in checks if not check.ok]
    if wrong:
        raise BackupError(f"Row counts differ from the manifest in: {', '.join(wrong)}.")
    if state["migrations"] != manifest["migrations"]:
        raise BackupError("The restored migration state differs from the manifest's.")
    log(f"Verified: {len(checks)} tables, {sum(found.values())} rows, as in the manifest.")
    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        log(
            f"{len(pending)} migration(s) of this version of the app not applied yet "
            "(the backup is older): run manage.py migrate."
        )
    return checks


# Both


def _vendor() -> str:
    if connection.vendor not in ("postgresql", "sqlite"):
        raise BackupError(f"Backups know PostgreSQL and SQLite, not {connection.vendor}.")
    return connection.vendor


def _database_label() -> str:
    """The database as a URL without its password, fit to print."""
    database = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{database['NAME']}"
    user = f"{database['USER']}@" if database.get("USER") else ""
    host = database.get("HOST") or "localhost"
    port = f":{database['PORT']}" if database.get("PORT") else ""
    return f"postgres://{user}{host}{port}/{database['NAME']}"


def _database_state(cursor: Any) -> dict[str, Any]:
    """The row count of every table the app's models use and the latest applied migration of
    each app, read through `cursor` (Django's or a plain DB-API one: the same SQL on both)."""
    existing = _existing_tables(cursor)
    tables = sorted(connection.introspection.django_table_names(include_views=False))
    counts = {}
    for table in tables:
        if table in existing:
            cursor.execute(f'SELECT COUNT(*) FROM "{table}"')  # noqa: S608 (names from the models)
            counts[table] = cursor.fetchone()[0]
    migrations: dict[str, str] = {}
    if "django_migrations" in existing:
        cursor.execute("SELECT app, name FROM django_migrations ORDER BY id")
        for app, name in cursor.fetchall():
            migrations[app] = name  # applied in id order: the last one wins
    return {"tables": counts, "migrations": dict(sorted(migrations.items()))}


def _existing_tables(cursor: Any) -> set[str]:
    # No query parameters: their placeholder differs between a plain sqlite3 cursor and Django's.
    if connection.vendor == "postgresql":
        cursor.execute(
            "SELECT relname FROM pg_class WHERE relkind IN ('r', 'p') AND pg_table_is_visible(oid)"
        )
    else:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {name for (name,) in cursor.fetchall()}


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(
            f"{name} is not installed: install the PostgreSQL client tools "
            f"(e.g. apt-get install postgresql-client) of the server's version or newer."
        )
    return path


def _tool_version(path: str) -> str:
    return _run([path, "--version"], what=Path(path).name).strip()


def _run(command: list[Any], *, what: str) -> str:
    result = subprocess.run(  # noqa: S603 (a fixed tool; arguments from the settings)
        [str(part) for part in command],
        env=_postgres_environment(),
        capture_output=True,
        text=True,
        timeout=TOOL_TIMEOUT_SECONDS,
        check=False,
    )
    if result.returncode != 0:
        raise BackupError(f"{what} failed (exit {result.returncode}): {result.stderr.strip()}")
    return result.stdout


def _postgres_environment() -> dict[str, str]:
    """libpq's variables for the database of the settings: the password stays out of every
    command line (which other users of the machine can read)."""
    database = connection.settings_dict
    environment = dict(os.environ)
    variables = {
        "PGHOST": database.get("HOST"),
        "PGPORT": database.get("PORT"),
        "PGUSER": database.get("USER"),
        "PGPASSWORD": database.get("PASSWORD"),
        "PGDATABASE": database.get("NAME"),
        "PGSSLMODE": database.get("OPTIONS", {}).get("sslmode"),
    }
    environment.update({key: str(value) for key, value in variables.items() if value})
    return environment


def _checksums(folder: Path) -> dict[str, dict[str, Any]]:
    return {
        path.relative_to(folder).as_posix(): {"bytes": path.stat().st_size, "sha256": _sha256(path)}
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _backup_paths(
    source: Path, media_root: Path, files: dict[str, dict[str, Any]]
) -> tuple[dict[str, Path], dict[str, Path], list[str]]:
    """Where each file of the manifest is read (inside the backup folder) and each media file
    written (inside MEDIA_ROOT), and the names of those that would lead out of their folder."""
    paths: dict[str, Path] = {}
    media: dict[str, Path] = {}
    outside: list[str] = []
    for name in files:
        path = _inside(source, name)
        is_media = name.startswith(f"{MEDIA}/")
        destination = _inside(media_root, name.removeprefix(f"{MEDIA}/")) if is_media else None
        if path is None or (is_media and destination is None):
            outside.append(repr(name))
            continue
        paths[name] = path
        if destination is not None:
            media[name] = destination
    return paths, media, outside


def _inside(folder: Path, name: str) -> Path | None:
    """The real path of the relative file name `name` under `folder`, or None when it could
    lead anywhere else: an absolute name, an empty, `.` or `..` part, a control character
    (NUL among them), or a symbolic link on the way that points out of the folder."""
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts) or CONTROL_CHARACTER.search(name):
        return None
    try:
        root = folder.resolve()
        path = root.joinpath(*parts).resolve()
    except (OSError, RuntimeError):  # a loop of symbolic links
        return None
    return path if path.is_relative_to(root) and path != root else None


def _damaged_files(paths: dict[str, Path], files: dict[str, dict[str, Any]]) -> list[str]:
    damaged = []
    for name, path in paths.items():
        entry = files[name]
        if (
            not path.is_file()
            or path.stat().st_size != entry["bytes"]
            or _sha256(path) != entry["sha256"]
        ):
            damaged.append(name)
    return damaged


def _media_clashes(destinations: dict[str, Path], files: dict[str, dict[str, Any]]) -> list[str]:
    clashes = []
    for name, path in destinations.items():
        if path.exists() and (not path.is_file() or _sha256(path) != files[name]["sha256"]):
            clashes.append(name)
    return clashes


def _media_unwritable(destinations: dict[str, Path]) -> list[str]:
    """Media files whose copy would fail (a file where a folder is needed, a folder where the
    file goes, no permission): found before the database is restored, not after."""
    unwritable = []
    for name, path in destinations.items():
        if path.exists():
            writable = path.is_file() and os.access(path, os.W_OK)
        else:
            existing = next(folder for folder in path.parents if folder.exists())
            writable = existing.is_dir() and os.access(existing, os.W_OK | os.X_OK)
        if not writable:
            unwritable.append(name)
    return unwritable


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _app_version() -> str:
    """The version of pyproject.toml, which the image holds too (no git needed)."""
    try:
        with (Path(settings.BASE_DIR) / "pyproject.toml").open("rb") as stream:
            return tomllib.load(stream)["project"]["version"]
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return "unknown"


def _size(path: Path) -> str:
    size = float(path.stat().st_size)
    unit = "B"
    for larger in ("KB", "MB", "GB"):
        if size < 1024:
            break
        size, unit = size / 1024, larger
    return f"{size:.0f} B" if unit == "B" else f"{size:.1f} {unit}"


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)
