"""Import speed and memory: 10k issues with their comments from a JSONL dump.

Prints, for SQLite and (when reachable) PostgreSQL: the time to store the issues, comments and
linked fixes (issues per second), the time to render and sanitise their Markdown (done once, right
after storing), and the peak memory of the importing process for two file sizes, to show that
memory stays flat in the file size.

    python bench/import_issues.py [--issues 10000] [--postgres URL]
"""

import argparse
import json
import os
import random
import resource
import tempfile
import time
from pathlib import Path

from benchkit import DEFAULT_POSTGRES, ROOT, django_setup, postgres_database, run_child

SAMPLE = ROOT / "corpus" / "data" / "sample-issues.jsonl"


def make_dump(path: Path, n_issues: int, seed: int = 7) -> int:
    """Write n_issues realistic issues (sample threads, renumbered) and return the file size."""
    samples = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
    rng = random.Random(seed)
    comment_id = 10_000_000
    with path.open("w") as out:
        for number in range(1, n_issues + 1):
            record = json.loads(json.dumps(rng.choice(samples)))
            record["number"] = number
            record["id"] = 50_000_000 + number
            for comment in record["comments_data"]:
                comment_id += 1
                comment["id"] = comment_id
            out.write(json.dumps(record) + "\n")
    return path.stat().st_size


def child(database_url: str, dump: Path) -> None:
    django_setup(database_url)

    from corpus.issue_import import issue_file_lines
    from corpus.services import issue_texts_render, issues_import

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    with dump.open("rb") as stream:
        report = issues_import(objects=issue_file_lines(stream), render=False)
    stored = time.perf_counter() - started
    started = time.perf_counter()
    rendered = issue_texts_render(issue_ids=None)
    render_seconds = time.perf_counter() - started
    print(
        json.dumps(
            {
                "issues": report.created,
                "comments": report.comments,
                "store_seconds": stored,
                "render_seconds": render_seconds,
                "texts_rendered": rendered,
                "rss_before_mb": rss_before / 1024,
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "DUMP"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return

    with tempfile.TemporaryDirectory() as folder:
        sizes = sorted({max(args.issues // 5, 1), args.issues})
        dumps = {}
        for n in sizes:
            dumps[n] = Path(folder) / f"issues-{n}.jsonl"
            megabytes = make_dump(dumps[n], n) / 1e6
            print(f"dump of {n} issues: {megabytes:.1f} MB")
        targets = [("SQLite", lambda: f"sqlite:///{folder}/bench.sqlite3")]
        targets.append(("PostgreSQL", lambda: args.postgres))
        print(
            f"{'database':<11} {'issues':>7} {'comments':>8} {'store s':>8} {'issues/s':>9} "
            f"{'render s':>9} {'texts/s':>8} {'peak MB':>8}"
        )
        for label, url_for in targets:
            for n in sizes:
                url = url_for()
                if label == "SQLite":
                    Path(url.removeprefix("sqlite:///")).unlink(missing_ok=True)
                elif not postgres_database(url):
                    break
                result = run_child(__file__, url, str(dumps[n]))
                print(
                    f"{label:<11} {result['issues']:>7} {result['comments']:>8} "
                    f"{result['store_seconds']:>8.2f} "
                    f"{result['issues'] / result['store_seconds']:>9.0f} "
                    f"{result['render_seconds']:>9.2f} "
                    f"{result['texts_rendered'] / result['render_seconds']:>8.0f} "
                    f"{result['peak_rss_mb']:>8.0f}"
                )
        print(
            "store = parse, validate and upsert issues, comments and linked fixes; "
            "render = Markdown to sanitised HTML, once per text."
        )


if __name__ == "__main__":
    main()
