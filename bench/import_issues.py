"""Import speed and memory: 10k issues with their comments from a JSONL dump.

Prints, for SQLite and (when reachable) PostgreSQL:

* end to end: `manage.py import_issues` on the dump, timed as a command run from the shell
  (Python and Django starting included, the project's bytecode compiled as `make run` leaves
  it; the database migrated before), against the goal of 10k issues in 2 s on SQLite. The
  best of `--repeat` runs, each on a fresh database. Beside it, the CPU time of the command's
  processes together, and the fastest any schedule of that work could finish on this machine:
  the start-up (the command on an empty file), then the rest of the CPU time spread evenly
  over the cores.
* the breakdown, for two file sizes: the time to store the issues, comments and linked fixes
  alone (issues per second), the time to render and sanitise their Markdown and extract their
  facets afterwards from the database (as a sync does; the import does it while storing), and
  the peak memory of the process, to show that memory stays flat in the file size.

    python bench/import_issues.py [--issues 10000] [--postgres URL] [--repeat 3]
"""

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from benchkit import (
    DEFAULT_POSTGRES,
    ROOT,
    bytecode_compiled,
    django_setup,
    machine_pace_ms,
    postgres_database,
    run_child,
)

SAMPLE = ROOT / "corpus" / "data" / "sample-issues.jsonl"
GOAL_SECONDS = 2.0  # for 10k issues on SQLite


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


def command_environment(database_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
    }


def manage(database_url: str, *arguments: str) -> tuple[float, float, float]:
    """Run manage.py with the arguments on the database; returns the seconds it took, the
    peak memory (MB) of its largest process and the CPU seconds of its processes together."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "manage.py", *arguments],
            stdout=subprocess.DEVNULL,
            stderr=errors,
            cwd=ROOT,
            env=command_environment(database_url),
        )
        # wait4 rather than wait: the memory of this command's processes, not of all children.
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            errors.seek(0)
            raise SystemExit(f"manage.py {' '.join(arguments)} failed:\n{errors.read().decode()}")
    # The rendering processes are the command's children, waited for: their time is counted.
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


@dataclass
class EndToEnd:
    seconds: float  # the best run
    peak_mb: float  # the largest process of any run
    cpu_seconds: float  # of the best run
    startup_seconds: float  # the command on an empty file (best run)
    startup_cpu_seconds: float

    def bound_seconds(self, cores: int) -> float:
        """No schedule of the run's work finishes sooner on `cores` cores: the start-up runs
        alone, and the rest of the CPU time at best keeps every core busy."""
        return self.startup_seconds + (self.cpu_seconds - self.startup_cpu_seconds) / cores


def end_to_end(label: str, url: str, dump: Path, repeat: int) -> EndToEnd | None:
    """`repeat` runs of import_issues on a freshly migrated database (and as many on an empty
    file, for the start-up), or None when the database is not reachable. The database is
    migrated once, then copied (SQLite) or emptied of the corpus (PostgreSQL) before each run."""
    if label == "SQLite":
        template = Path(url.removeprefix("sqlite:///"))
        template.unlink(missing_ok=True)
        manage(url, "migrate", "--no-input")
        run_url = f"sqlite:///{template.with_name('run.sqlite3')}"

        def fresh() -> None:
            shutil.copyfile(template, run_url.removeprefix("sqlite:///"))

    else:
        if not postgres_database(url):
            return None
        manage(url, "migrate", "--no-input")
        run_url = url

        def fresh() -> None:
            import psycopg

            # Every table that points to the repositories goes too, down to comments and fixes.
            with psycopg.connect(url, autocommit=True) as connection:
                connection.execute("TRUNCATE corpus_repository CASCADE")

    runs, startups = [], []
    empty = dump.with_name("empty.jsonl")
    empty.write_bytes(b"")
    for _ in range(repeat):
        fresh()
        startups.append(manage(run_url, "import_issues", str(empty)))
        runs.append(manage(run_url, "import_issues", str(dump)))
    if label != "SQLite":
        postgres_database(url, create=False)
    best = min(runs)
    startup = min(startups)
    return EndToEnd(
        seconds=best[0],
        peak_mb=max(peak for _, peak, _ in runs),
        cpu_seconds=best[2],
        startup_seconds=startup[0],
        startup_cpu_seconds=startup[2],
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--issues", type=int, default=10_000)
    parser.add_argument(
        "--postgres", default=os.environ.get("BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    )
    parser.add_argument("--repeat", type=int, default=3, help="end-to-end runs; the best counts")
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "DUMP"))
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]))
        return

    bytecode_compiled()
    pace = machine_pace_ms()
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
            f"\nend to end: manage.py import_issues of {args.issues} issues "
            f"(best of {args.repeat}; goal for 10k issues on SQLite: <= {GOAL_SECONDS:.0f} s)"
        )
        cores = len(os.sched_getaffinity(0))
        print(
            f"{'database':<11} {'seconds':>8} {'issues/s':>9} {'peak MB':>8} {'CPU s':>6} "
            f"{'start s':>8} {'bound s':>8} {'goal':>6}"
        )
        for label, url_for in targets:
            measured = end_to_end(label, url_for(), dumps[args.issues], args.repeat)
            if measured is None:
                continue
            goal = ""
            if label == "SQLite" and args.issues == 10_000:
                goal = "met" if measured.seconds <= GOAL_SECONDS else "missed"
            print(
                f"{label:<11} {measured.seconds:>8.2f} {args.issues / measured.seconds:>9.0f} "
                f"{measured.peak_mb:>8.0f} {measured.cpu_seconds:>6.2f} "
                f"{measured.startup_seconds:>8.2f} {measured.bound_seconds(cores):>8.2f} "
                f"{goal:>6}"
            )
        print(
            "peak MB: the command's largest process (it renders in worker processes). CPU s: "
            "its processes together. start s: the command on an empty file. bound s: the "
            f"fastest any schedule of that CPU time could finish on this machine's {cores} "
            "cores (the start-up, then the rest spread evenly).\n"
            f"machine pace: {pace:.1f} ms for sum(range(1_000_000)) (best of 5); figures of two "
            "runs compare at like paces.\n"
        )

        print("breakdown: storing alone, then rendering and extracting facets from the database")
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
            "store = parse, validate and upsert issues, comments and linked fixes; render = "
            "Markdown to sanitised HTML, once per text, and facets, once per issue."
        )


if __name__ == "__main__":
    main()
