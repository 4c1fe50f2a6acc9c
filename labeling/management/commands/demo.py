from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from labeling.models import Study
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
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
        "issues, create demo accounts and the demo study. Safe to run again."
    )

    def handle(self, *args, **options) -> None:
        if not settings.DEMO_ALLOWED:
            raise CommandError(
                "demo creates a superuser with a published password and is refused under these "
                f"settings ({settings.SETTINGS_MODULE}). Create accounts with createsuperuser; "
                "run demo only on a local instance (config.settings.local)."
            )
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
        self.stdout.write(f"Codebook: {version}; demo study: /studies/demo/")
        self.stdout.write("Demo accounts (demo only, never use in production):")
        for username, password, _ in DEMO_ACCOUNTS:
            self.stdout.write(f"  {username} / {password}")
