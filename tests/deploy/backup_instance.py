"""An instance of the app for the backup test, driven from a process of its own pointed at a
database of its own (DATABASE_URL, MEDIA_ROOT in the environment): the pytest database lives in
an open transaction, which pg_dump would never see.

    python -m tests.deploy.backup_instance build
    python -m tests.deploy.backup_instance restored DATASET_FILE NEW_SLUG

`build` migrates the empty database and makes the dataset export tests' study (every kind of
gold label, raw labels, open items, through the same services and helper as they use) and an
export job's file; `restored` checks that a restored instance misses no migration and restores
the dataset file under a new slug. Each prints one JSON line last, with the agreement report of
every study. Several steps share a process because starting Django costs seconds.
"""

import json
import sys

import django


def build() -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from corpus.issue_import import issue_file_lines
    from corpus.models import Issue
    from corpus.services import issues_import
    from exports.jobs import export_job_start
    from exports.models import ExportJob
    from taxonomy.codebook_file import codebook_file_read
    from taxonomy.services import codebook_load
    from tests.conftest import CODEBOOK_FILE, PASSWORD, SAMPLE_ISSUES_FILE
    from tests.exports.dataset_study import resolved_study_make

    def make_user(username: str):
        return get_user_model().objects.create_user(username=username, password=PASSWORD)

    call_command("migrate", interactive=False, verbosity=0)
    codebook_version, _ = codebook_load(
        data=codebook_file_read(CODEBOOK_FILE.read_bytes()), publish=True
    )
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    issues = list(Issue.objects.select_related("repository").order_by("repository", "number"))
    names = ("manager", "annotator1", "annotator2", "adjudicator")
    people = {name: make_user(name) for name in names}
    study = resolved_study_make(codebook_version, issues, people, make_user)
    # Without REDIS_URL the job runs when its row commits, in this process: a file in MEDIA_ROOT.
    job = export_job_start(study=study, user=people["manager"], format="csv", raw=True)
    job.refresh_from_db()
    assert job.status == ExportJob.Status.DONE, job.error
    print(json.dumps({"study": study.slug, "export_file": job.file.name, **described()}))


def restored(dataset_file: str, slug: str) -> None:
    from django.core.management import call_command

    call_command("migrate", check_unapplied=True, verbosity=0)  # exits 1 if one is missing
    call_command("import_dataset", dataset_file, study=slug)
    print(json.dumps(described()))


def described() -> dict:
    from django.core.serializers.json import DjangoJSONEncoder

    from labeling.agreement_report import study_agreement_report
    from labeling.models import Study

    # Text, not objects: a report may hold NaN, which is never equal to itself.
    reports = {
        study.slug: json.dumps(
            {**study_agreement_report(study=study), "study": None},
            cls=DjangoJSONEncoder,
            sort_keys=True,
        )
        for study in Study.objects.order_by("slug")
    }
    return {"agreement": reports}


if __name__ == "__main__":
    django.setup()
    {"build": build, "restored": restored}[sys.argv[1]](*sys.argv[2:])
