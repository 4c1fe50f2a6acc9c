"""Uploads in the product, timed: a study restored from a dataset file (POST /studies/restore/)
and an issue dump imported into a study (POST /studies/{slug}/import/issues/).

In a throwaway PostgreSQL database, builds the dataset export's test study (12 items, three
annotators, gold labels) and writes a JSONL dataset of N items from its first row's shape (each
item a new issue with 24 raw labels and 9 gold labels), then restores it through the page, the
way a browser posts it; then posts a dump of N issues (the sample issues, renumbered, without
comments) to the study's import page, the task run inline as the embedded default runs it.
Prints each time, the file sizes and what was stored.

    python bench/uploads.py [--items 2000] [--postgres URL]
"""

import argparse
import json
import time

from benchkit import ROOT, django_setup, postgres_database, run_child

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench_uploads"


def child(database_url: str, n_items: int) -> dict:
    django_setup(database_url)
    import orjson
    from django.contrib.auth import get_user_model
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test import Client

    from config.celery import app as celery_app
    from corpus.issue_import import issue_file_lines
    from corpus.models import Issue
    from corpus.services import issues_import
    from exports.dataset import dataset_rows, dataset_shape
    from ingest.models import IssueImportJob
    from labeling.models import Study
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load
    from tests.conftest import CODEBOOK_FILE, SAMPLE_ISSUES_FILE
    from tests.exports.dataset_study import resolved_study_make

    celery_app.conf.task_always_eager = celery_app.conf.task_eager_propagates = True
    users = get_user_model().objects

    def make_user(username: str):
        return users.create_user(username=username)  # signed in with force_login

    version, _ = codebook_load(data=codebook_file_read(CODEBOOK_FILE.read_bytes()), publish=True)
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    issues = list(Issue.objects.select_related("repository").order_by("repository", "number"))
    people = {
        name: make_user(name)
        for name in ("manager", "annotator1", "annotator2", "adjudicator", "outsider")
    }
    study = resolved_study_make(version, issues, people, make_user)
    first = next(iter(dataset_rows(shape=dataset_shape(study=study, raw=True))))
    full_name = first["issue"].rpartition("#")[0]
    lines = [
        orjson.dumps({**first, "issue": f"{full_name}#{900_000 + i}", "number": 900_000 + i})
        for i in range(n_items)
    ]
    dataset = b"\n".join(lines) + b"\n"
    root = users.create_superuser(username="root", email=None, password=None)
    browser = Client()
    browser.force_login(root)

    start = time.perf_counter()
    restored = browser.post(
        "/studies/restore/",
        {"file": SimpleUploadedFile("dataset.jsonl", dataset), "study": "restored"},
    )
    restore_seconds = time.perf_counter() - start
    assert restored.status_code == 302, restored.status_code
    restored_study = Study.objects.get(slug="restored")

    samples = [json.loads(line) for line in SAMPLE_ISSUES_FILE.read_text().splitlines()]
    dump = "".join(
        json.dumps(
            {
                **{k: v for k, v in samples[i % len(samples)].items() if k != "comments_data"},
                "number": 950_000 + i,
                "id": 9_500_000_000 + i,
            }
        )
        + "\n"
        for i in range(n_items)
    ).encode()
    start = time.perf_counter()
    uploaded = browser.post(
        f"/studies/{study.slug}/import/issues/", {"file": SimpleUploadedFile("dump.jsonl", dump)}
    )
    dump_seconds = time.perf_counter() - start
    assert uploaded.status_code == 302, uploaded.status_code
    job = IssueImportJob.objects.get()
    return {
        "items": n_items,
        "dataset_bytes": len(dataset),
        "restore_seconds": round(restore_seconds, 1),
        "restored_items": restored_study.items.count(),
        "dump_bytes": len(dump),
        "dump_seconds": round(dump_seconds, 1),
        "dump_job": f"{job.status}: {job.lines_accepted} of {job.lines_total} lines accepted, "
        f"{job.items_added} items added",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--postgres", default=DEFAULT_POSTGRES)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        database_url, n_items = options.child
        print(json.dumps(child(database_url, int(n_items))))
        return
    if not postgres_database(options.postgres):
        return
    try:
        result = run_child(str(ROOT / "bench" / "uploads.py"), options.postgres, str(options.items))
    finally:
        postgres_database(options.postgres, create=False)
    for key, value in result.items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
