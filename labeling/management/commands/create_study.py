from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from common.exceptions import ApplicationError
from common.management import CommandWithVersionOption
from common.text import issue_reference_parse
from corpus.models import Issue
from labeling.services.studies import study_create
from taxonomy.selectors import codebook_version_get


class Command(CommandWithVersionOption):
    help = "Create a study on a codebook version, with annotators and issues."

    def add_arguments(self, parser) -> None:
        parser.add_argument("slug")
        parser.add_argument("--name", default="")
        parser.add_argument("--codebook", required=True)
        parser.add_argument("--version", dest="label", default=None)
        parser.add_argument("--k", type=int, default=2)
        parser.add_argument("--not-blind", action="store_true")
        parser.add_argument(
            "--resolution",
            choices=["adjudication", "majority"],
            default="adjudication",
            help="what decides a disagreement: an adjudicator, or a strict majority (k >= 3)",
        )
        parser.add_argument("--annotators", default="", help="usernames, comma-separated")
        parser.add_argument("--managers", default="", help="usernames, comma-separated")
        parser.add_argument("--adjudicators", default="", help="usernames, comma-separated")
        issues = parser.add_mutually_exclusive_group()
        issues.add_argument("--issues", type=Path, help="file with one owner/name#number a line")
        issues.add_argument("--all", action="store_true", help="every issue of the corpus")

    def handle(self, *args, **options) -> None:
        try:
            version = codebook_version_get(name=options["codebook"], label=options["label"])
            study = study_create(
                slug=options["slug"],
                name=options["name"] or options["slug"],
                codebook_version=version,
                k=options["k"],
                blind=not options["not_blind"],
                resolution_rule=options["resolution"],
                annotators=_users(options["annotators"]),
                managers=_users(options["managers"]),
                adjudicators=_users(options["adjudicators"]),
                issues=_issues(options["issues"], options["all"]),
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        self.stdout.write(
            f"Study {study.slug}: {study.items.count()} items, "
            f"{study.items.filter(assignments__isnull=False).distinct().count()} assigned."
        )


def _users(names: str) -> list:
    usernames = [name.strip() for name in names.split(",") if name.strip()]
    users = {u.username: u for u in get_user_model().objects.filter(username__in=usernames)}
    missing = [name for name in usernames if name not in users]
    if missing:
        raise CommandError(f"Unknown users: {', '.join(missing)}")
    return [users[name] for name in usernames]


def _issues(path: Path | None, everything: bool) -> list[Issue]:
    if everything:
        return list(Issue.objects.filter(is_pull_request=False).order_by("repository", "number"))
    if path is None:
        return []
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        raise CommandError(f"Cannot read {path}: {error}") from error
    found, errors = [], []
    for line_number, line in enumerate(lines, start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            owner, name, number = issue_reference_parse(line)
        except ValueError:
            errors.append(f"{path}:{line_number}: expected owner/name#number, got {line!r}")
            continue
        issue = Issue.objects.filter(
            repository__owner=owner, repository__name=name, number=number
        ).first()
        if issue is None:
            errors.append(f"{path}:{line_number}: {line} is not in the corpus")
        else:
            found.append(issue)
    if errors:
        raise CommandError("\n".join(errors))
    return found
