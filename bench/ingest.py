"""GitHub sync cost and speed against the stand-in GitHub on 127.0.0.1.

Builds one repository of generated issues in the stand-in (real sample threads, renumbered:
bodies and comments of real DeepSpeed, Megatron-LM and Transformers issues; a share of them with
a merged fixing pull request or a closing commit), then, for SQLite and (when reachable)
PostgreSQL, syncs it into a fresh database with the service the Celery task calls, in a child
process while this process serves the stand-in (so the two do not share one interpreter lock):

* requests per issue on a first sync, split into the list pages, the timelines (comments and
  fix events in one read), the fix details (one per pull request or commit), the lookup;
* requests for a second sync of the unchanged repository;
* issues stored per second on the first sync (listing, reading, storing, rendering Markdown).

    python bench/ingest.py [--issues 1500] [--fixed-share 0.3] [--postgres URL]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter

from benchkit import ROOT, django_setup, postgres_database, run_child

sys.path.insert(0, str(ROOT))

SAMPLE = ROOT / "corpus" / "data" / "sample-issues.jsonl"
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench_ingest"
OWNER, NAME = "bench", "trainer"


def build_server(n_issues: int, fixed_share: float, seed: int = 11):
    """The stand-in with one repository of n_issues closed issues, each a real sample thread."""
    from tests.github_server import FakeGitHub

    samples = [json.loads(line) for line in SAMPLE.read_text().splitlines() if line.strip()]
    rng = random.Random(seed)
    github = FakeGitHub()
    github.add_repository(OWNER, NAME)
    next_pull = n_issues + 1
    for number in range(1, n_issues + 1):
        sample = rng.choice(samples)
        minute = number // 60
        issue = {
            "number": number,
            "title": sample["title"],
            "body": sample["body"],
            "user": sample["user"],
            "labels": [label["name"] for label in sample["labels"]],
            "created_at": f"2023-01-{1 + minute // 1440:02d}T{minute // 60 % 24:02d}:"
            f"{minute % 60:02d}:{number % 60:02d}Z",
            "state": "closed",
            "state_reason": "completed",
        }
        issue["updated_at"] = issue["closed_at"] = issue["created_at"].replace("2023-", "2024-")
        comments = [
            {key: value for key, value in comment.items() if key not in ("id", "url", "html_url")}
            for comment in sample["comments_data"]
        ] or [{"body": "Thanks, this is fixed in the next release.", "user": "maintainer"}]
        github.add_issue(OWNER, NAME, issue, comments=comments)
        if rng.random() < fixed_share:
            if rng.random() < 0.5:
                github.add_linked_fix(OWNER, NAME, number, "pr", str(next_pull))
                next_pull += 1
            else:
                github.add_linked_fix(OWNER, NAME, number, "commit", f"{number:040x}")
    return github


def child(database_url: str, github_url: str) -> None:
    # Migrating again is a no-op for the second sync.
    django_setup(database_url, GITHUB_API_URL=github_url, GITHUB_TOKEN="")
    from corpus.models import Issue, IssueComment, LinkedFix
    from ingest.dispatch import sync_request
    from ingest.models import Source
    from ingest.sources import source_get_or_create
    from ingest.sync import sync_run_to_completion

    source, _ = source_get_or_create(repository=f"{OWNER}/{NAME}")
    source = Source.objects.get(pk=source.pk)
    run = sync_request(source=source, enqueue=False)
    started = time.perf_counter()
    outcome = sync_run_to_completion(run_id=run.pk, worker="bench")
    seconds = time.perf_counter() - started
    run.refresh_from_db()
    print(
        json.dumps(
            {
                "status": outcome.status,
                "seconds": seconds,
                "requests": run.requests_used,
                "counts": run.counts,
                "issues": Issue.objects.count(),
                "comments": IssueComment.objects.count(),
                "fixes": LinkedFix.objects.count(),
            }
        )
    )


def request_kinds(paths: list[str]) -> Counter:
    kinds: Counter = Counter()
    for path in paths:
        bare = path.split("?")[0]
        if bare.endswith("/issues"):
            kinds["list"] += 1
        elif bare.endswith("/timeline"):
            kinds["timeline"] += 1
        elif "/pulls/" in bare or "/commits/" in bare:
            kinds["fix"] += 1
        else:
            kinds["lookup"] += 1
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=1500)
    parser.add_argument("--fixed-share", type=float, default=0.3)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "GITHUB_URL"))
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return

    started = time.perf_counter()
    github = build_server(args.issues, args.fixed_share)
    github.start()
    targets: list[tuple[str, str]] = []
    print(
        f"stand-in: {args.issues} closed issues with comments, about {args.fixed_share:.0%} with "
        f"a linked fix, built in {time.perf_counter() - started:.1f} s"
    )
    try:
        with tempfile.TemporaryDirectory() as folder:
            targets.append(("SQLite", f"sqlite:///{folder}/bench.sqlite3"))
            if postgres_database(args.postgres, create=True):
                targets.append(("PostgreSQL", args.postgres))
            print(
                f"{'database':<11} {'issues':>6} {'fixes':>6} {'requests':>8} {'req/issue':>9} "
                f"{'w/o fixes':>9} {'list':>5} {'timeline':>8} {'fix':>5} {'resync':>6} "
                f"{'seconds':>7} {'issues/s':>8}"
            )
            for label, url in targets:
                github.reset_log()
                first = run_child(__file__, url, github.base_url)
                kinds = request_kinds(github.paths_requested())
                github.reset_log()
                again = run_child(__file__, url, github.base_url)
                assert first["status"] == again["status"] == "done", (first, again)
                assert again["counts"].get("created", 0) == again["counts"].get("updated", 0) == 0
                issues = first["issues"]
                without_fixes = (first["requests"] - kinds["fix"]) / issues
                print(
                    f"{label:<11} {issues:>6} {first['fixes']:>6} {first['requests']:>8} "
                    f"{first['requests'] / issues:>9.3f} {without_fixes:>9.3f} "
                    f"{kinds['list']:>5} {kinds['timeline']:>8} {kinds['fix']:>5} "
                    f"{again['requests']:>6} {first['seconds']:>7.2f} "
                    f"{issues / first['seconds']:>8.0f}"
                )
    finally:
        github.stop()
        if any(label == "PostgreSQL" for label, _ in targets):
            postgres_database(args.postgres, create=False)
    print(
        "req/issue: all requests of a first sync per issue stored; w/o fixes: the same without "
        "the one request per linked fix (list share + timeline + lookup); resync: requests of a "
        "second sync of the unchanged repository; issues/s: first sync, Markdown rendered."
    )


if __name__ == "__main__":
    main()
