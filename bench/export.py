"""The dataset export of large studies: the streamed download, and the job's file.

Builds, in a throwaway PostgreSQL database, one study per size given (10,000 and 100,000 items
by default; one issue each, with a linked fix) labeled by 2 annotators on one dimension
(screening), and a gold label on that dimension for every item. Then, each in a fresh process:

* the streamed download, as a manager asks for it on the export page
  (`/studies/{slug}/export/download/?format=...&raw=on`, through Django's whole request
  handling), in CSV and JSONL: time to the first byte and to the first row, total time, CPU
  time, the process's peak resident memory (and what it was before the request) and the size;
  with `--gzip`, asked for compressed as a browser asks (and unpacked by the reader, in the
  same process);
* with `--files`, the job's file (`dataset_export_write`, what an export job and
  `export_dataset` run) in CSV, JSONL and Parquet at the largest size.

Goals: the first byte at once; 10k items in under 1 s, 100k in under 10 s; memory flat, under
150 MB, whatever the size.

    python bench/export.py [--items 10000 100000] [--files] [--gzip] [--postgres URL]
                           [--keep | --reuse]
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
import zlib

from benchkit import ROOT, django_setup, postgres_database, run_child

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench_export"
ANNOTATORS = 2
GOALS = {10_000: 1.0, 100_000: 10.0}  # seconds, for the whole download
GOAL_MB = 150


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def build(database_url: str, n_items: int) -> None:
    """One study, "bench", of `n_items` items (what bench/backup.py and bench/faults.py use)."""
    django_setup(database_url)
    seconds = studies_build({"bench": n_items})
    from labeling.models import Annotation

    print(
        json.dumps(
            {"seconds": seconds, "items": n_items, "annotations": Annotation.objects.count()}
        )
    )


def studies_build(sizes: dict[str, int]) -> float:
    """A study of each size, by slug, on the database Django is set up with. Returns the
    seconds it took."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from corpus.models import Issue, LinkedFix, Repository
    from labeling.models import Annotation, Assignment, Resolution, StudyItem
    from labeling.services.setup import study_member_join
    from labeling.services.studies import study_create
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.models import Category, Dimension
    from taxonomy.services import codebook_load

    started = time.perf_counter()
    version, _ = codebook_load(
        data=codebook_file_read((ROOT / "taxonomy/data/llm-training-issues.json").read_bytes()),
        publish=True,
    )
    users = [get_user_model().objects.create_user(f"annotator{i}") for i in range(ANNOTATORS)]
    manager = get_user_model().objects.create_user("manager")
    repository = Repository.objects.create(owner="bench", name="trainer")
    screening = Dimension.objects.get(version=version, key="screening")
    categories = list(
        Category.objects.filter(dimension=screening)
        .order_by("position")
        .values_list("id", flat=True)
    )
    now = timezone.now()
    numbered = 0
    for slug, size in sizes.items():
        study = study_create(
            slug=slug,
            name=f"Bench {size}",
            codebook_version=version,
            k=ANNOTATORS,
            sampling={"method": "all", "seed": 7},
        )
        study_member_join(study=study, user=manager, role="manager")
        issues = Issue.objects.bulk_create(
            (
                Issue(
                    repository=repository,
                    number=n,
                    title=f"Hang in allreduce after step {n} with ZeRO-3",
                    state="closed",
                    author="reporter",
                    labels=["bug", "training"],
                    created_at=now,
                    updated_at=now,
                    closed_at=now,
                )
                for n in range(numbered + 1, numbered + size + 1)
            ),
            batch_size=5000,
        )
        numbered += size
        issue_ids = [issue.pk for issue in issues]
        LinkedFix.objects.bulk_create(
            (
                LinkedFix(
                    issue_id=issue_id,
                    kind="pr",
                    ref=str(issue_id),
                    url=f"https://github.com/bench/trainer/pull/{issue_id}",
                    files_changed=2,
                    additions=20,
                    deletions=3,
                )
                for issue_id in issue_ids
            ),
            batch_size=5000,
        )
        round_ = study.rounds.get()
        items = StudyItem.objects.bulk_create(
            (
                StudyItem(
                    study=study, issue_id=i, round=round_, status="resolved", annotators_needed=2
                )
                for i in issue_ids
            ),
            batch_size=5000,
        )
        item_ids = [item.pk for item in items]
        assignments = Assignment.objects.bulk_create(
            (
                Assignment(
                    item_id=item_id,
                    study=study,
                    annotator=user,
                    status="submitted",
                    submitted_at=now,
                )
                for item_id in item_ids
                for user in users
            ),
            batch_size=5000,
        )
        annotations = Annotation.objects.bulk_create(
            (
                Annotation(assignment_id=assignment.pk, dimension=screening)
                for assignment in assignments
            ),
            batch_size=5000,
        )
        through = Annotation.categories.through
        through.objects.bulk_create(
            (through(annotation_id=a.pk, category_id=categories[a.pk % 2]) for a in annotations),
            batch_size=5000,
        )
        resolutions = Resolution.objects.bulk_create(
            (Resolution(item_id=i, dimension=screening, method="adjudicated") for i in item_ids),
            batch_size=5000,
        )
        gold = Resolution.categories.through
        gold.objects.bulk_create(
            (gold(resolution_id=r.pk, category_id=categories[0]) for r in resolutions),
            batch_size=5000,
        )
    # What autovacuum would have done by the time anyone exports: the planner needs the
    # tables' statistics to choose its joins.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return time.perf_counter() - started


def _django(database_url: str) -> None:
    # The database is built and migrated: start Django as a web process or a worker does,
    # without migrating, so that the memory measured is the export's and not the migration
    # graph's.
    os.environ.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings.test")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def stream(database_url: str, size: int, file_format: str, gzip: bool) -> None:
    """The download through the page's view, read chunk by chunk; with `gzip`, asked for as a
    browser does, so that the web process compresses it too (GZipMiddleware)."""
    _django(database_url)
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018 (a web process has its views loaded already)
    client = Client()
    client.force_login(get_user_model().objects.get(username="manager"))
    url = f"/studies/bench-{size}/export/download/?format={file_format}&raw=on"
    before = peak_rss_mb()
    started, cpu_started = time.perf_counter(), time.process_time()
    response = client.get(url, headers={"accept-encoding": "gzip"} if gzip else {})
    assert response.status_code == 200, response.content[:200]
    # Lines and the first row are counted in what a browser reads, the file unpacked.
    unpack = zlib.decompressobj(wbits=31) if gzip else None
    first_byte = first_row = None
    size_bytes = 0
    lines = 0
    header = 1 if file_format == "csv" else 0
    for chunk in response.streaming_content:
        if first_byte is None:
            first_byte = time.perf_counter() - started
        size_bytes += len(chunk)
        lines += (unpack.decompress(chunk) if unpack else chunk).count(b"\n")
        if first_row is None and lines > header:
            first_row = time.perf_counter() - started
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    print(
        json.dumps(
            {
                "first_byte": first_byte,
                "first_row": first_row,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "peak_mb": peak_rss_mb(),
                "before_mb": before,
                "file_mb": size_bytes / 1024 / 1024,
                "lines": lines,
            }
        )
    )


def write_file(database_url: str, size: int, file_format: str, folder: str) -> None:
    """The job's file: what `export_job_run` and `export_dataset` write."""
    _django(database_url)
    from exports.services import dataset_export_write
    from labeling.models import Study

    study = Study.objects.select_related("codebook_version__codebook").get(slug=f"bench-{size}")
    before = peak_rss_mb()
    path = os.path.join(folder, f"dataset.{file_format}")
    started, cpu_started = time.perf_counter(), time.process_time()
    with open(path, "wb") as output:
        rows = dataset_export_write(study=study, format=file_format, output=output, raw=True)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    print(
        json.dumps(
            {
                "rows": rows,
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "peak_mb": peak_rss_mb(),
                "before_mb": before,
                "file_mb": os.path.getsize(path) / 1024 / 1024,
            }
        )
    )


def _goal(size: int) -> str:
    seconds = GOALS.get(size)
    return f"< {seconds:g} s" if seconds else "-"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--files", action="store_true", help="also the job's file, each format, largest size"
    )
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument(
        "--gzip", action="store_true", help="ask for the download compressed, as a browser does"
    )
    parser.add_argument("--keep", action="store_true", help="keep the database afterwards")
    parser.add_argument("--reuse", action="store_true", help="use the kept database again")
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        kind, url, *rest = args.child
        if kind == "build":
            django_setup(url)
            seconds = studies_build({f"bench-{size}": int(size) for size in rest})
            print(json.dumps({"seconds": seconds}))
        elif kind == "stream":
            stream(url, int(rest[0]), rest[1], rest[2] == "gzip")
        else:
            write_file(url, int(rest[0]), rest[1], rest[2])
        return
    sizes = sorted(set(args.items))
    if not args.reuse and not postgres_database(args.postgres):
        return
    try:
        if not args.reuse:
            built = run_child(__file__, "build", args.postgres, *map(str, sizes))
            print(
                f"studies of {', '.join(f'{size:,}' for size in sizes)} items x {ANNOTATORS} "
                f"annotators x 1 dimension, a gold label per item, PostgreSQL "
                f"(built in {built['seconds']:.0f} s); exported with the raw labels"
            )
        print(
            "\nthe streamed download (the export page's Download now), a fresh process each"
            + (", gzip (file MB: as sent)" if args.gzip else "")
        )
        header = ("items", "format", "1st byte s", "1st row s", "total s", "goal", "CPU s")
        print("{:>8} {:<6} {:>10} {:>9} {:>8} {:>12} {:>6} {:>8} {:>9} {:>8}".format(
            *header, "peak MB", "(before)", "file MB"
        ))  # fmt: skip
        for size in sizes:
            for file_format in ("csv", "jsonl"):
                result = run_child(
                    __file__,
                    "stream",
                    args.postgres,
                    str(size),
                    file_format,
                    "gzip" if args.gzip else "plain",
                )
                assert result["lines"] >= size, result
                print(
                    f"{size:>8,} {file_format:<6} {result['first_byte']:>10.3f} "
                    f"{result['first_row']:>9.3f} {result['seconds']:>8.2f} {_goal(size):>12} "
                    f"{result['cpu_seconds']:>6.2f} "
                    f"{result['peak_mb']:>8.0f} {result['before_mb']:>9.0f} "
                    f"{result['file_mb']:>8.1f}"
                )
        if args.files:
            largest = sizes[-1]
            print(f"\nthe job's file (export_dataset, an export job), {largest:,} items")
            header = ("format", "rows", "time s", "CPU s", "peak MB", "(before)", "file MB")
            print("{:<8} {:>8} {:>7} {:>6} {:>8} {:>9} {:>8}".format(*header))
            with tempfile.TemporaryDirectory() as folder:
                for file_format in ("csv", "jsonl", "parquet"):
                    result = run_child(
                        __file__, "file", args.postgres, str(largest), file_format, folder
                    )
                    print(
                        f"{file_format:<8} {result['rows']:>8,} {result['seconds']:>7.2f} "
                        f"{result['cpu_seconds']:>6.2f} {result['peak_mb']:>8.0f} "
                        f"{result['before_mb']:>9.0f} {result['file_mb']:>8.1f}"
                    )
        print(
            f"\ngoals: the first byte at once; 10k items < 1 s, 100k < 10 s; peak < {GOAL_MB} MB "
            "whatever the size (CPU s: this process's, without the database server's; Parquet "
            "is written whole, then sent: pyarrow alone takes some 90 MB)"
        )
    finally:
        if not (args.keep or args.reuse):
            postgres_database(args.postgres, create=False)


if __name__ == "__main__":
    main()
