"""Server-side time of the labeling page, of its background draft save and of submitting it,
with 10k and 100k issues in the corpus and the study (PostgreSQL; SQLite when PostgreSQL is not
reachable).

For each size: p50 and p95 over 200 page views, 200 draft saves and 200 submits by two
annotators, measured in process through Django's test client (the full request: middleware,
session, view, template), the mean CPU time of a request in this process, and the SQL queries
each request runs.

    python bench/labeling.py [--sizes 10000 100000] [--k 2] [--postgres URL]
"""

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from benchkit import (
    DEFAULT_POSTGRES,
    ROOT,
    SUBMIT_FORM,
    django_setup,
    form_submitted,
    messages_shown,
    postgres_database,
    sample_issues,
    starter_codebook_published,
)

REQUESTS = 200


def child(database_url: str, n_issues: int, k: int) -> None:
    django_setup(database_url)
    from django.conf import settings

    settings.ALLOWED_HOSTS = ["testserver"]
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.utils import timezone

    from common.bulk import bulk_upsert
    from corpus.models import Issue, IssueComment, Repository
    from corpus.rendering import render_markdown
    from labeling.models import Assignment, StudyItem
    from labeling.services.holders import items_holders_recount
    from labeling.services.studies import study_create

    samples = sample_issues()
    rendered = [(s["title"], s["body"] or "", render_markdown(s["body"] or "")) for s in samples]
    version = starter_codebook_published()
    users = [get_user_model().objects.create_user(f"annotator{i}") for i in (1, 2)]
    repository = Repository.objects.create(owner="bench", name="repo")
    now = timezone.now()
    for start in range(0, n_issues, 5000):
        rows = []
        for number in range(start + 1, min(start + 5000, n_issues) + 1):
            title, body, body_html = rendered[number % len(rendered)]
            rows.append(
                {
                    "repository_id": repository.id,
                    "number": number,
                    "title": title,
                    "body": body,
                    "body_html": body_html or "<p></p>",
                    "state": "closed",
                    "created_at": now,
                    "updated_at": now,
                    "labels": [],
                    "raw": {},
                    "facets": {},
                    "stored_at": now,
                    "comments_count": 3,
                    "github_id": None,
                    "is_pull_request": False,
                    "state_reason": "completed",
                    "author": "someone",
                    "closed_at": now,
                }
            )
        bulk_upsert(Issue, rows, unique_fields=["repository_id", "number"])
    issue_ids = list(Issue.objects.order_by("id").values_list("id", flat=True))
    comments = [
        {
            "issue_id": issue_id,
            "github_id": issue_id * 10 + k,
            "author": "someone",
            "body": "same here",
            "body_html": "<p>same here</p>",
            "created_at": now,
            "updated_at": now,
        }
        for issue_id in issue_ids
        for k in range(3)
    ]
    for start in range(0, len(comments), 20_000):
        bulk_upsert(IssueComment, comments[start : start + 20_000], unique_fields=["github_id"])
    study = study_create(
        slug="bench", name="bench", codebook_version=version, k=k, annotators=users
    )
    round_ = study.rounds.get()
    StudyItem.objects.bulk_create(
        [StudyItem(study=study, issue_id=i, round=round_) for i in issue_ids], batch_size=5000
    )
    # Each item to k of the two annotators: with k = 1, half of the items to each.
    Assignment.objects.bulk_create(
        [
            Assignment(item_id=item_id, study=study, annotator=users[(item_id + j) % 2])
            for item_id in StudyItem.objects.values_list("id", flat=True)
            for j in range(k)
        ],
        batch_size=5000,
    )
    # Counted as the services count them when they hand items out.
    items_holders_recount(item_ids=StudyItem.objects.values_list("id", flat=True))

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")  # fresh statistics, as autovacuum would give a live site
    rng = random.Random(5)
    item_ids = rng.sample(list(StudyItem.objects.values_list("id", flat=True)), REQUESTS)
    answers = SUBMIT_FORM
    results = {}
    # One signed-in browser per annotator, as in real use; the category-tree cache is warmed by
    # a first view, as it is after a server's first request.
    clients = []
    for user in users:
        client = Client()
        client.force_login(user)
        clients.append(client)
    clients[item_ids[0] % 2].get(f"/studies/bench/items/{item_ids[0]}/")
    draft = {key: value for key, value in answers.items() if key != "action"}
    for phase in ("page", "draft", "submit"):
        timings, queries = [], []
        cpu_started = time.process_time()
        for item_id in item_ids:
            client = clients[item_id % 2]
            url = f"/studies/bench/items/{item_id}/"
            # Queries counted on the timed requests themselves, so that the submit's are those
            # of a real submit (the cost of counting is far below a request's).
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                if phase == "page":
                    response = client.get(url)
                    expected = 200
                elif phase == "draft":
                    response = client.post(f"{url}draft/", draft)
                    expected = 200
                else:
                    response = form_submitted(client, url)
                    expected = 302
                timings.append(time.perf_counter() - started)
            assert response.status_code == expected, (phase, response.status_code)
            queries.append(len(captured))
            messages_shown(client)
        cpu = time.process_time() - cpu_started
        timings.sort()
        results[phase] = {
            "p50_ms": 1000 * statistics.median(timings),
            "p95_ms": 1000 * timings[int(0.95 * len(timings)) - 1],
            "cpu_ms": 1000 * cpu / len(item_ids),
            "queries": max(queries),
        }
    print(json.dumps(results))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    # k = 1: every submit completes its item and runs the resolution rule, as in bench/load.py.
    parser.add_argument("--k", type=int, default=2, help="annotators per item (2 by default)")
    parser.add_argument("--child", nargs=3, metavar=("DATABASE_URL", "ISSUES", "K"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), int(args.child[2]))
        return
    print(f"{REQUESTS} requests each; server-side time through the full Django stack")
    print(f"{'database':<11} {'issues':>7} {'request':<7} {'p50':>8} {'p95':>8} {'CPU':>8} "
          f"{'queries':>7}")  # fmt: skip
    with tempfile.TemporaryDirectory() as folder:
        for n in args.sizes:
            url = args.postgres
            label = "PostgreSQL"
            if not postgres_database(url):
                url, label = f"sqlite:///{folder}/labeling-{n}.sqlite3", "SQLite"
            output = subprocess.run(
                [sys.executable, __file__, "--child", url, str(n), str(args.k)],
                check=True, capture_output=True, text=True, cwd=ROOT,
            ).stdout  # fmt: skip
            result = json.loads(output.strip().splitlines()[-1])
            for phase, figures in result.items():
                print(
                    f"{label:<11} {n:>7} {phase:<7} {figures['p50_ms']:>6.1f}ms "
                    f"{figures['p95_ms']:>6.1f}ms {figures['cpu_ms']:>6.1f}ms "
                    f"{figures['queries']:>7}"
                )


if __name__ == "__main__":
    main()
