from datetime import datetime
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Q

from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.records import RecordError, issue_record_parse
from corpus.services import issues_import
from labeling.models import Study
from labeling.services.demo import demo_pilot_read, study_demo_pilot_create
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read, codebook_parse
from taxonomy.models import CodebookVersion
from taxonomy.services import codebook_load

CODEBOOK_FILE = settings.BASE_DIR / "taxonomy" / "data" / "llm-training-issues.json"
SAMPLE_ISSUES_FILE = settings.BASE_DIR / "corpus" / "data" / "sample-issues.jsonl"

# Demo-only accounts for the embedded default; the README prints them too.
DEMO_ACCOUNTS = [
    ("manager", "manager-demo", True),
    ("annotator1", "annotator1-demo", False),
    ("annotator2", "annotator2-demo", False),
    ("adjudicator", "adjudicator-demo", False),
]


class Command(BaseCommand):
    help = (
        "Make the embedded default ready: migrate, load the starter codebook and the sample "
        "issues, create demo accounts, the demo study (empty, to label) and the demo pilot "
        "(labeled with illustrative labels). Safe to run again: what exists is kept."
    )
    # The system checks import the URLconf and with it scikit-learn (2 s of a 3 s start); the
    # second `make run` skips them here, and runserver runs them right after anyway.
    requires_system_checks = []

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--serve",
            metavar="ADDRPORT",
            help="then serve it with runserver (no reloader) in this same process: `make run` "
            "starts Python and Django once instead of twice",
        )

    def handle(self, *args, **options) -> None:
        self.set_up()
        if options["serve"]:
            # call_command skips runserver's system checks unless told otherwise; they load
            # the URLconf, which the first request would load anyway.
            call_command("runserver", options["serve"], use_reloader=False, skip_checks=False)

    def set_up(self) -> None:
        if not settings.DEMO_ALLOWED:
            raise CommandError(
                "demo creates a superuser with a published password and is refused under these "
                f"settings ({settings.SETTINGS_MODULE}). Create accounts with createsuperuser; "
                "run demo only on a local instance (config.settings.local)."
            )
        if (ready := demo_set_up_already()) is not None:
            self.stdout.write("Set up already: nothing to migrate or load.")
            self.ready_print(ready)
            return
        self.check()
        call_command("migrate", interactive=False, verbosity=0)
        version, _ = codebook_load(
            data=codebook_file_read(Path(CODEBOOK_FILE).read_bytes()), publish=True
        )
        with Path(SAMPLE_ISSUES_FILE).open("rb") as stream:
            report = issues_import(objects=issue_file_lines(stream))
        self.stdout.write(f"Sample issues: {report.summary()}")

        users = {}
        User = get_user_model()
        for username, password, is_superuser in DEMO_ACCOUNTS:
            user, created = User.objects.get_or_create(
                username=username, defaults={"is_staff": is_superuser, "is_superuser": is_superuser}
            )
            if created:
                user.set_password(password)
                user.save(update_fields=["password"])
            users[username] = user

        if not Study.objects.filter(slug="demo").exists():
            study_create(
                slug="demo",
                name="Demo: bugs in LLM training systems",
                codebook_version=version,
                k=2,
                blind=True,
                annotators=[users["annotator1"], users["annotator2"]],
                managers=[users["manager"]],
                adjudicators=[users["adjudicator"]],
                issues=list(
                    Issue.objects.filter(is_pull_request=False).order_by("repository", "number")
                ),
            )
        # Created once: a pilot that exists is kept as it is, with whatever was done in it since.
        pilot = demo_pilot_read()
        if not Study.objects.filter(slug=pilot.slug).exists():
            study_demo_pilot_create(
                codebook_version=version,
                users=users,
                manager=users["manager"],
                adjudicator=users["adjudicator"],
                pilot=pilot,
            )
        self.ready_print(version)

    def ready_print(self, version: CodebookVersion) -> None:
        self.stdout.write(f"Codebook: {version}; demo study to label: /studies/demo/")
        self.stdout.write(
            f"Demo pilot, labeled with illustrative labels (not research data): "
            f"/studies/{demo_pilot_read().slug}/"
        )
        self.stdout.write("Demo accounts (demo only, never use in production):")
        for username, password, _ in DEMO_ACCOUNTS:
            self.stdout.write(f"  {username} / {password}")


def demo_set_up_already() -> CodebookVersion | None:
    """The starter codebook's version when a run of `demo` would change nothing, else None.

    A second `make run` then starts in about a second instead of importing and rendering the
    sample again. Cheap checks of the database itself rather than a marker of an earlier run, so
    that a database that was emptied or restored is set up again: no migration left to apply,
    the starter codebook published with the file's content hash, every sample issue stored and
    not older than in the file (the import's own test for "unchanged"), the demo accounts and
    the demo study and the demo pilot present.
    """
    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return None
    spec = codebook_parse(codebook_file_read(Path(CODEBOOK_FILE).read_bytes()))
    version = CodebookVersion.objects.filter(
        codebook__name=spec.name,
        label=spec.version,
        content_hash=spec.content_hash,
        status=CodebookVersion.Status.PUBLISHED,
    ).first()
    if version is None:
        return None
    usernames = [username for username, _, _ in DEMO_ACCOUNTS]
    if get_user_model().objects.filter(username__in=usernames).count() != len(usernames):
        return None
    if Study.objects.filter(slug__in=["demo", demo_pilot_read().slug]).count() != 2:
        return None
    with Path(SAMPLE_ISSUES_FILE).open("rb") as stream:
        wanted: dict[tuple[str, str, int], datetime] = {}
        for _, obj in issue_file_lines(stream):
            try:
                record = issue_record_parse(obj)
            except RecordError:
                return None  # the import reports the line
            key = (record.owner, record.name, record.number)
            wanted[key] = max(record.updated_at, wanted.get(key, record.updated_at))
    repositories = {(owner, name) for owner, name, _ in wanted}
    stored = Issue.objects.filter(
        Q.create(
            [Q(repository__owner=owner, repository__name=name) for owner, name in repositories],
            connector=Q.OR,
        ),
        number__in={number for _, _, number in wanted},
    ).values_list("repository__owner", "repository__name", "number", "updated_at")
    found = {(owner, name, number): updated for owner, name, number, updated in stored}
    if any(found.get(key) is None or found[key] < updated for key, updated in wanted.items()):
        return None
    return version
