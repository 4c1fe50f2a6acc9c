"""A backup and its restore on a large instance: time, size and peak memory.

Builds, in a throwaway PostgreSQL database, the study of bench/export.py (50,000 items with a
linked fix each, 2 annotators on one dimension = 100,000 submitted annotations, a gold label
per item), then runs `manage.py backup` (the dump, and each study's dataset with raw labels),
`manage.py backup --no-datasets`, and `manage.py restore_backup` into a second, empty
database, each in a fresh process, and prints per step the time, the peak resident memory of
the Django process (pg_dump and pg_restore run beside it) and the size of what was written.

    python bench/backup.py [--items 50000] [--postgres URL]
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from benchkit import ROOT, postgres_database, run_child
from export import build

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench_backup"


def folder_mb(path: Path) -> float:
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) / 1024 / 1024


def step(database_url: str, command: str, *arguments: str) -> None:
    """A child: one management command on the database, measured."""
    os.environ.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings.test")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    started = time.perf_counter()
    with open(os.devnull, "w") as quiet:
        call_command(command, *arguments, stdout=quiet)
    seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs=argparse.REMAINDER)  # options of the command too
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "build":
            build(args.child[1], int(args.child[2]))
        else:
            step(*args.child)
        return
    restored = args.postgres + "_restored"
    if not (postgres_database(args.postgres) and postgres_database(restored)):
        return
    try:
        built = run_child(__file__, "build", args.postgres, str(args.items))
        print(
            f"instance: {built['items']:,} items x 2 annotators x 1 dimension = "
            f"{built['annotations']:,} submitted annotations, a gold label per item "
            f"(built in {built['seconds']:.0f} s), PostgreSQL"
        )
        header = ("step", "time s", "peak RSS MB", "written MB")
        print("{:<26} {:>7} {:>12} {:>11}".format(*header))
        with tempfile.TemporaryDirectory() as folder:
            # The instance's files: none here, and never the checkout's own media/.
            os.environ["MEDIA_ROOT"] = str(Path(folder) / "media")
            runs = [
                ("backup", args.postgres, "backup", "--no-datasets"),
                ("backup with datasets", args.postgres, "backup"),
            ]
            backups = {}
            for name, database, *command in runs:
                output = Path(folder) / name.replace(" ", "-")
                result = run_child(__file__, database, *command, "--output", str(output))
                (backups[name],) = output.iterdir()
                written = folder_mb(backups[name])
                print(
                    f"{name:<26} {result['seconds']:>7.1f} {result['peak_mb']:>12.0f} "
                    f"{written:>11.1f}"
                )
            dump = backups["backup"] / "database.dump"
            result = run_child(__file__, restored, "restore_backup", str(backups["backup"]))
            print(
                f"{'restore_backup (verified)':<26} {result['seconds']:>7.1f} "
                f"{result['peak_mb']:>12.0f}"
            )
            print(f"the dump alone: {dump.stat().st_size / 1024 / 1024:.1f} MB (custom format)")
    finally:
        postgres_database(args.postgres, create=False)
        postgres_database(restored, create=False)


if __name__ == "__main__":
    main()
