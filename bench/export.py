"""The dataset export of a large study: time and peak memory per format.

Builds, in a throwaway PostgreSQL database, a study of 50,000 items (one issue each, with a
linked fix) labeled by 2 annotators on one dimension (screening) = 100,000 submitted
annotations, and a gold label on that dimension for every item. Then exports it with the raw
labels (`export_dataset --raw`: every row carries the 9 dimensions' gold labels and the two
annotators' answers) to CSV, JSONL and Parquet, each in a fresh process, and prints per format
the time, the process's peak resident memory (and what it was before the export began) and the
file size. Targets: under 10 s and 200 MB each.

    python bench/export.py [--items 50000] [--postgres URL]
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time

from benchkit import ROOT, django_setup, postgres_database, run_child

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench_export"
ANNOTATORS = 2


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def build(database_url: str, n_items: int) -> None:
    django_setup(database_url)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from corpus.models import Issue, LinkedFix, Repository
    from labeling.models import Annotation, Assignment, Resolution, StudyItem
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
    study = study_create(
        slug="bench",
        name="Bench",
        codebook_version=version,
        k=ANNOTATORS,
        sampling={"method": "all", "seed": 7},
    )
    repository = Repository.objects.create(owner="bench", name="trainer")
    now = timezone.now()
    Issue.objects.bulk_create(
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
            for n in range(1, n_items + 1)
        ),
        batch_size=5000,
    )
    issue_ids = list(Issue.objects.order_by("id").values_list("id", flat=True))
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
    StudyItem.objects.bulk_create(
        (
            StudyItem(study=study, issue_id=i, round=round_, status="resolved", annotators_needed=2)
            for i in issue_ids
        ),
        batch_size=5000,
    )
    item_ids = list(StudyItem.objects.order_by("id").values_list("id", flat=True))
    Assignment.objects.bulk_create(
        (
            Assignment(item_id=item_id, annotator=user, status="submitted", submitted_at=now)
            for item_id in item_ids
            for user in users
        ),
        batch_size=5000,
    )
    screening = Dimension.objects.get(version=version, key="screening")
    categories = list(
        Category.objects.filter(dimension=screening)
        .order_by("position")
        .values_list("id", flat=True)
    )
    Annotation.objects.bulk_create(
        (
            Annotation(assignment_id=assignment_id, dimension=screening)
            for assignment_id in Assignment.objects.values_list("id", flat=True)
        ),
        batch_size=5000,
    )
    through = Annotation.categories.through
    through.objects.bulk_create(
        (
            through(annotation_id=annotation_id, category_id=categories[annotation_id % 2])
            for annotation_id in Annotation.objects.values_list("id", flat=True)
        ),
        batch_size=5000,
    )
    Resolution.objects.bulk_create(
        (Resolution(item_id=i, dimension=screening, method="adjudicated") for i in item_ids),
        batch_size=5000,
    )
    gold = Resolution.categories.through
    gold.objects.bulk_create(
        (
            gold(resolution_id=resolution_id, category_id=categories[0])
            for resolution_id in Resolution.objects.values_list("id", flat=True)
        ),
        batch_size=5000,
    )
    # What autovacuum would have done by the time anyone exports: the planner needs the
    # tables' statistics to choose its joins.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - started,
                "items": len(item_ids),
                "annotations": Annotation.objects.count(),
            }
        )
    )


def export(database_url: str, file_format: str, folder: str) -> None:
    # The database is built and migrated: start Django as a worker does, without migrating,
    # so that the memory measured is the export's and not the migration graph's.
    os.environ.update(DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings.test")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from exports.services import dataset_export_write
    from labeling.models import Study

    study = Study.objects.select_related("codebook_version__codebook").get(slug="bench")
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=50_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs="+")
    args = parser.parse_args()
    if args.child:
        if args.child[0] == "build":
            build(args.child[1], int(args.child[2]))
        else:
            export(args.child[1], args.child[2], args.child[3])
        return
    if not postgres_database(args.postgres):
        return
    try:
        built = run_child(__file__, "build", args.postgres, str(args.items))
        print(
            f"study: {built['items']:,} items x {ANNOTATORS} annotators x 1 dimension = "
            f"{built['annotations']:,} submitted annotations, a gold label per item "
            f"(built in {built['seconds']:.0f} s); exported with --raw, PostgreSQL"
        )
        header = ("format", "rows", "time s", "CPU s", "peak RSS MB", "(before)", "file MB")
        print("{:<8} {:>8} {:>7} {:>6} {:>12} {:>9} {:>8}".format(*header))
        with tempfile.TemporaryDirectory() as folder:
            for file_format in ("csv", "jsonl", "parquet"):
                result = run_child(__file__, "export", args.postgres, file_format, folder)
                print(
                    f"{file_format:<8} {result['rows']:>8,} {result['seconds']:>7.2f} "
                    f"{result['cpu_seconds']:>6.2f} "
                    f"{result['peak_mb']:>12.0f} {result['before_mb']:>9.0f} "
                    f"{result['file_mb']:>8.1f}"
                )
        print(
            "targets: under 10 s and 200 MB per format; each format runs in a fresh process "
            "(CPU s: this process's, without the database server's)"
        )
    finally:
        postgres_database(args.postgres, create=False)


if __name__ == "__main__":
    main()
