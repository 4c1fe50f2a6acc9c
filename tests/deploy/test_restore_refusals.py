"""A restore refuses a backup that it could not restore whole, before it touches the database: a
file name that leads out of the backup folder or out of MEDIA_ROOT (`..`, an absolute name, a
symbolic link on the way), a manifest not of the shape `backup` writes, a media file that cannot
be written. Each refusal is a clear error (no traceback), and nothing is changed: the database
stays empty, nothing is written in MEDIA_ROOT or anywhere else.

The backups are made by hand, as someone who wants a restore to write elsewhere would make
them: a SQLite database file and a manifest whose checksums match. The restore runs in a
process of its own on a SQLite database of its own, as in test_backup.py.
"""

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.deploy.test_backup import app, sqlite_tables

MEDIA_FILE = b"issue,label\n1,crash\n"
LEFT_OUT = object()  # a manifest key given this value is left out


def checksum(path: str) -> dict:
    data = Path(path).read_bytes()
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def backup_make(tmp_path: Path) -> Path:
    """A backup folder as `backup` writes it on SQLite: the database (one table, so that a
    restore shows), a media file, no manifest yet."""
    folder = tmp_path / "backups" / "issuecoder-20250101T000000Z"
    (folder / "media" / "exports").mkdir(parents=True)
    with sqlite3.connect(folder / "database.sqlite3") as database:
        database.execute("CREATE TABLE restored_marker (id integer)")
    (folder / "media" / "exports" / "good.csv").write_bytes(MEDIA_FILE)
    return folder


def manifest_write(folder: Path, *, names: tuple[str, ...] = (), **changes) -> None:
    """The manifest of every file in `folder` and of the extra `names` (joined to the folder as
    they are, `..` and all), with their true checksums; `changes` replace top-level keys (or
    leave them out, with LEFT_OUT)."""
    files = {
        path.relative_to(folder).as_posix(): checksum(str(path))
        for path in folder.rglob("*")
        if path.is_file()
    }
    files.update({name: checksum(os.path.join(folder, name)) for name in names})
    manifest = {
        "format": 1,
        "database": {"vendor": "sqlite", "file": "database.sqlite3"},
        "tables": {},
        "migrations": {},
        "datasets": [],
        "files": files,
        **changes,
    }
    manifest = {key: value for key, value in manifest.items() if value is not LEFT_OUT}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def restore(folder: Path, tmp_path: Path):
    return app(
        ["restore_backup", str(folder)],
        database=f"sqlite:///{tmp_path / 'target.sqlite3'}",
        media=tmp_path / "media",
        check=False,
    )


def restored_tables(tmp_path: Path) -> dict:
    target = tmp_path / "target.sqlite3"
    return sqlite_tables(target) if target.exists() else {}


def test_a_hand_made_backup_restores(tmp_path):
    # The control: the hostile backups below differ from this one in one point each.
    folder = backup_make(tmp_path)
    manifest_write(folder)

    run = restore(folder, tmp_path)

    assert run.returncode == 0, run.stderr
    assert "as in the manifest" in run.stdout
    assert "restored_marker" in restored_tables(tmp_path)
    assert (tmp_path / "media" / "exports" / "good.csv").read_bytes() == MEDIA_FILE


def escape_by_dot_dot(folder: Path, tmp_path: Path) -> Path:
    # Read from beside the backup folder, written beside MEDIA_ROOT.
    (folder.parent / "escaped.csv").write_bytes(MEDIA_FILE)
    manifest_write(folder, names=("media/../../escaped.csv",))
    return tmp_path / "escaped.csv"


def escape_by_source_link(folder: Path, tmp_path: Path) -> Path:
    # A link in the backup to a file elsewhere on the machine, which would land in MEDIA_ROOT.
    (tmp_path / "secret.txt").write_bytes(b"not for the media folder\n")
    (folder / "media" / "exports" / "secret.csv").symlink_to(tmp_path / "secret.txt")
    manifest_write(folder)
    return tmp_path / "media" / "exports" / "secret.csv"


def escape_by_absolute_name(folder: Path, tmp_path: Path) -> Path:
    outside = tmp_path / "outside.csv"
    outside.write_bytes(MEDIA_FILE)
    manifest_write(folder, names=(str(outside),))
    return tmp_path / "media" / "outside.csv"


def escape_by_media_link(folder: Path, tmp_path: Path) -> Path:
    # MEDIA_ROOT's exports/ is a link out of it: writing exports/good.csv would write elsewhere.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "exports").symlink_to(tmp_path / "elsewhere")
    manifest_write(folder)
    return tmp_path / "elsewhere" / "good.csv"


def escape_by_database_name(folder: Path, tmp_path: Path) -> Path:
    other = folder.parent / "other.sqlite3"
    with sqlite3.connect(other) as database:
        database.execute("CREATE TABLE restored_marker (id integer)")
    manifest_write(
        folder,
        names=("../other.sqlite3",),
        database={"vendor": "sqlite", "file": "../other.sqlite3"},
    )
    return tmp_path / "media" / "exports" / "good.csv"


def media_folder_is_a_file(folder: Path, tmp_path: Path) -> Path:
    # The copy would fail after the database was restored: a half-restored instance.
    (tmp_path / "media").mkdir()
    (tmp_path / "media" / "exports").write_bytes(b"a file where a folder is needed\n")
    manifest_write(folder)
    return tmp_path / "media" / "exports" / "good.csv"


@pytest.mark.parametrize(
    ("hostile", "message"),
    [
        (escape_by_dot_dot, "lead out of it or out of MEDIA_ROOT"),
        (escape_by_source_link, "lead out of it or out of MEDIA_ROOT"),
        (escape_by_absolute_name, "lead out of it or out of MEDIA_ROOT"),
        (escape_by_media_link, "lead out of it or out of MEDIA_ROOT"),
        (escape_by_database_name, "lead out of it or out of MEDIA_ROOT"),
        (media_folder_is_a_file, "cannot be written into MEDIA_ROOT"),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_a_backup_that_leads_elsewhere_is_refused_and_nothing_changes(
    tmp_path, hostile: Callable[[Path, Path], Path], message: str
):
    folder = backup_make(tmp_path)
    never_written = hostile(folder, tmp_path)

    run = restore(folder, tmp_path)

    assert run.returncode != 0, run.stdout
    assert message in run.stderr and "nothing was restored" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert restored_tables(tmp_path) == {}
    assert not never_written.exists()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"database": LEFT_OUT}, '`database` must be an object with a "vendor" and a "file"'),
        ({"files": []}, "`files` must be an object of file names"),
        ({"tables": {"labeling_study": "1"}}, "`tables` must be an object of table names"),
        (
            {"files": {"database.sqlite3": {"bytes": 1}}},
            "`files` entries without a size and a SHA-256: 'database.sqlite3'",
        ),
    ],
    ids=["no-database", "files-a-list", "count-a-string", "no-checksum"],
)
def test_a_manifest_of_another_shape_is_a_clear_error(tmp_path, changes: dict, message: str):
    folder = backup_make(tmp_path)
    manifest_write(folder, **changes)

    run = restore(folder, tmp_path)

    assert run.returncode != 0
    assert message in run.stderr and "nothing was restored" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr
    assert restored_tables(tmp_path) == {}
    assert not (tmp_path / "media" / "exports" / "good.csv").exists()
