"""What the benchmark scripts share: a fresh PostgreSQL database, a measurement run in a child
process (one database URL per process, memory measured on its own), and the pieces their studies
are built from (the sample issues, the starter codebook, labels with a known agreement)."""

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/issuecoder_bench"


def postgres_database(url: str, *, create: bool = True) -> bool:
    """Drop the benchmark's database and, with `create`, make it again, empty. False (and a
    message) when PostgreSQL is not reachable."""
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin_url = url.rsplit("/", 1)[0] + "/postgres"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=3) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
            if create:
                connection.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as error:
        print(f"PostgreSQL not reachable ({error}); skipping it.")
        return False
    return True


def run_child(script: str, *arguments: str) -> dict:
    """Run `script --child ARGUMENTS...` and return the JSON object its last line prints."""
    output = subprocess.run(
        [sys.executable, script, "--child", *arguments],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return json.loads(output.strip().splitlines()[-1])


def machine_pace_ms() -> float:
    """How long this machine takes for a fixed piece of Python work, in ms (the best of 5 runs
    of `sum(range(1_000_000))`). The same code's figures on the same 2-core machine swung by
    twofold from one day to the next with what else ran on its host: two runs' figures compare
    only as far as their paces do."""
    import timeit

    return 1000 * min(timeit.repeat("sum(range(1_000_000))", number=5, repeat=5)) / 5


def bytecode_compiled() -> None:
    """The project's bytecode, as `make run` leaves it (`make compile`): where bytecode is not
    written (PYTHONDONTWRITEBYTECODE), each command a benchmark starts would compile the
    project again."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-x", r"/\.venv/", "."], cwd=ROOT, check=True
    )


def django_setup(database_url: str, **environment: str) -> None:
    """Start Django in this (child) process on the given database, migrated."""
    os.environ.update(
        DATABASE_URL=database_url, DJANGO_SETTINGS_MODULE="config.settings.test", **environment
    )
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def messages_shown(client) -> None:
    """Clear the messages a request left for the next page, as a browser does by following a
    submit's redirect to the page that shows them: left in the test client's cookie, every
    submit's message would pile up and be read and written again by the next request."""
    client.cookies.pop("messages", None)


# What the scripts build their studies from, once Django is set up (django_setup).

# A labeling form's submit with the starter codebook's screened-in answers, as the page posts it.
SUBMIT_FORM = {
    "action": "submit",
    "dim-screening": "include", "dim-symptom": "crash", "dim-root_cause": "api_misuse",
    "dim-fix_pattern": "fix_api_usage", "dim-training_stage": "installation_build",
    "dim-debugging_practice": ["error_message_analysis"], "rationale-root_cause": "because",
}  # fmt: skip


def form_submitted(client, url: str, *, action: str = "submit"):
    """The labeling form's submit (or, with `action`, its draft) posted as a browser posts it,
    in the form's own encoding (application/x-www-form-urlencoded); only the page's background
    draft saves send multipart form data, which Django's test client sends by default and takes
    longer to parse."""
    body = urllib.parse.urlencode({**SUBMIT_FORM, "action": action}, doseq=True)
    return client.post(url, body, content_type="application/x-www-form-urlencoded")


def sample_issues() -> list[dict]:
    """The bundled sample of real issues (GitHub's JSON, with `comments_data`)."""
    path = ROOT / "corpus/data/sample-issues.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def starter_codebook_published():
    """The starter codebook, loaded and published: its version, which the studies label with."""
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load

    path = ROOT / "taxonomy/data/llm-training-issues.json"
    version, _ = codebook_load(data=codebook_file_read(path.read_bytes()), publish=True)
    return version


def labels_made(*, version, seed: int = 11, agreement: float = 0.75, extra: float = 0.0) -> None:
    """An annotation on every dimension of `version` for each assignment stored, with one
    category: the item's true one (drawn once per item and dimension) with the probability
    `agreement`, else one at random; on a multi-label dimension a second at random with the
    probability `extra`. Same seed, same labels."""
    import random

    from labeling.models import Annotation, Assignment
    from taxonomy.models import Category, Dimension

    dimensions = {d.id: d for d in Dimension.objects.filter(version=version).order_by("position")}
    categories = {
        dimension_id: list(
            Category.objects.filter(dimension_id=dimension_id).values_list("id", flat=True)
        )
        for dimension_id in dimensions
    }
    Annotation.objects.bulk_create(
        [
            Annotation(assignment_id=assignment_id, dimension=dimension)
            for assignment_id in Assignment.objects.values_list("id", flat=True)
            for dimension in dimensions.values()
        ],
        batch_size=5000,
    )
    rng = random.Random(seed)
    truth: dict[tuple[int, int], int] = {}
    through = Annotation.categories.through
    links = []
    for annotation_id, item_id, dimension_id in Annotation.objects.values_list(
        "id", "assignment__item_id", "dimension_id"
    ).iterator(chunk_size=10_000):
        options = categories[dimension_id]
        true_label = truth.setdefault((item_id, dimension_id), rng.choice(options))
        label = true_label if rng.random() < agreement else rng.choice(options)
        links.append(through(annotation_id=annotation_id, category_id=label))
        if extra and dimensions[dimension_id].multi_label and rng.random() < extra:
            second = rng.choice(options)
            if second != label:
                links.append(through(annotation_id=annotation_id, category_id=second))
    through.objects.bulk_create(links, batch_size=5000)
