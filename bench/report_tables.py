"""The paper's tables of a large study: 10k items over 3 repositories with gold labels on every
dimension of the starter codebook (multi-label ones with one to three categories), stored in
SQLite and PostgreSQL. Prints, per kind of table, the time to build it and its number of
queries (which must not grow with the items), and the time of every format of every table and
of the zip. No annotations: agreement by round is timed by bench/agreement_db.py.

    python bench/report_tables.py [--items 10000] [--postgres URL]
"""

import argparse
import json
import os
import random
import tempfile
import time

from benchkit import DEFAULT_POSTGRES, ROOT, django_setup, postgres_database, run_child


def child(database_url: str, n_items: int) -> None:
    django_setup(database_url)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from common.tables import table_csv, table_latex, table_markdown
    from corpus.models import Issue, Repository
    from exports.charts import table_chart_svg
    from exports.report_files import report_zip
    from exports.tables import (
        SYSTEM,
        ReportFilters,
        crosstab_table,
        distribution_table,
        funnel_table,
        paper_table_specs,
    )
    from labeling.models import Resolution, StudyItem
    from labeling.services.studies import study_create
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.models import Category, Dimension
    from taxonomy.services import codebook_load

    version, _ = codebook_load(
        data=codebook_file_read((ROOT / "taxonomy/data/llm-training-issues.json").read_bytes()),
        publish=True,
    )
    study = study_create(slug="bench", name="bench", codebook_version=version, k=2)
    repositories = [Repository.objects.create(owner="bench", name=f"repo{i}") for i in range(3)]
    now = timezone.now()
    Issue.objects.bulk_create(
        [
            Issue(repository=repositories[n % 3], number=n, title=f"issue {n}", created_at=now,
                  updated_at=now)
            for n in range(1, n_items + 1)
        ],
        batch_size=2000,
    )  # fmt: skip
    round_ = study.rounds.get()
    StudyItem.objects.bulk_create(
        [
            StudyItem(study=study, issue_id=i, round=round_, status="resolved")
            for i in Issue.objects.values_list("id", flat=True)
        ],
        batch_size=2000,
    )
    dimensions = list(Dimension.objects.filter(version=version).order_by("position"))
    Resolution.objects.bulk_create(
        [
            Resolution(item_id=item_id, dimension=dimension, method="consensus")
            for item_id in StudyItem.objects.values_list("id", flat=True)
            for dimension in dimensions
        ],
        batch_size=5000,
    )
    categories = {
        d.id: list(Category.objects.filter(dimension=d).values_list("id", flat=True))
        for d in dimensions
    }
    multi = {d.id for d in dimensions if d.multi_label}
    rng = random.Random(7)
    through = Resolution.categories.through
    links = []
    for resolution_id, dimension_id in Resolution.objects.values_list("id", "dimension_id"):
        count = rng.randint(1, 3) if dimension_id in multi else 1
        for category_id in rng.sample(categories[dimension_id], count):
            links.append(through(resolution_id=resolution_id, category_id=category_id))
    through.objects.bulk_create(links, batch_size=5000)
    if connection.vendor == "postgresql":
        # Planner statistics, as autovacuum would have them after a bulk load this size.
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    paper_table_specs(study=study)  # the codebook cache, once

    def measured(function) -> tuple[float, int]:
        best, queries = float("inf"), 0
        for _ in range(3):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                function()
                best = min(best, time.perf_counter() - started)
            queries = len(captured)
        return best, queries

    parent = ReportFilters(level=0)
    results = {
        "distribution (leaf)": measured(
            lambda: distribution_table(study=study, dimension_key="root_cause")
        ),
        "distribution, multi-label (parent)": measured(
            lambda: distribution_table(
                study=study, dimension_key="parallel_feature", filters=parent
            )
        ),
        "cross-tab of two dimensions": measured(
            lambda: crosstab_table(
                study=study, row_dimension="symptom", column_dimension="root_cause"
            )
        ),
        "cross-tab by system (parent)": measured(
            lambda: crosstab_table(
                study=study, row_dimension="root_cause", column_dimension=SYSTEM, filters=parent
            )
        ),
        "funnel": measured(lambda: funnel_table(study=study)),
    }
    specs = [spec for spec in paper_table_specs(study=study) if spec.kind != "agreement"]

    def every_table_every_format() -> None:
        for spec in specs:
            table = spec.build(ReportFilters())
            table_csv(table), table_markdown(table), table_latex(table)
            table_chart_svg(spec.kind, table)

    results[f"{len(specs)} tables x 4 formats"] = measured(every_table_every_format)
    results["zip of all tables (incl. agreement)"] = measured(
        lambda: report_zip(study=study, filters=ReportFilters())
    )
    print(json.dumps({"gold_links": len(links), **results}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "ITEMS"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    print(f"study: {args.items} items x 3 repositories, gold labels on 9 dimensions")
    with tempfile.TemporaryDirectory() as folder:
        for label, url in (
            ("SQLite", f"sqlite:///{folder}/report.sqlite3"),
            ("PostgreSQL", args.postgres),
        ):
            if label == "PostgreSQL" and not postgres_database(url):
                continue
            result = run_child(__file__, url, str(args.items))
            print(f"{label} ({result.pop('gold_links')} gold category links)")
            for name, (seconds, queries) in result.items():
                print(f"  {name:<38} {seconds * 1000:>8.1f} ms {queries:>4} queries")


if __name__ == "__main__":
    main()
