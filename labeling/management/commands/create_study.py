from argparse import ArgumentTypeError
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from common.exceptions import ApplicationError
from common.management import CommandWithVersionOption
from common.text import iso_time_parse, issue_reference_parse
from corpus.models import Issue
from corpus.selectors import IssueSelection
from labeling.services.setup import RoundPlan, SamplingRule, study_setup
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
        selection = parser.add_argument_group(
            "selection and sampling",
            "Draw the study's issues from the corpus by a rule; the rule and the seed are stored "
            "with the study, and the same rule and seed draw the same issues anywhere.",
        )
        selection.add_argument(
            "--repository", action="append", default=[], help="owner/name (repeatable)"
        )
        selection.add_argument("--state", choices=["any", "open", "closed"], default="any")
        selection.add_argument(
            "--label",
            action="append",
            dest="github_labels",
            default=[],
            help="a GitHub label (repeatable)",
        )
        selection.add_argument("--labels-match", choices=["any", "all"], default="any")
        selection.add_argument("--has-fix", action="store_true", help="only issues with a fix")
        selection.add_argument("--created-after", type=iso_date, help="ISO date or time")
        selection.add_argument("--created-before", type=iso_date, help="ISO date or time")
        selection.add_argument("--query", default="", help="words of the title or body")
        selection.add_argument("--sample", type=int, help="draw N issues (in proportion "
                               "to the repositories' sizes with --stratified)")  # fmt: skip
        selection.add_argument("--per-repository", type=int, help="draw N issues of each")
        selection.add_argument(
            "--stratified", action="store_true", help="with --sample: split N by repository"
        )
        selection.add_argument("--seed", type=int, default=0)
        selection.add_argument("--pilot", type=int, help="a pilot round of the first N drawn")
        selection.add_argument(
            "--overlap", type=float, default=1.0, help="share of items coded by k (0 to 1)"
        )

    def handle(self, *args, **options) -> None:
        by_rule = any(
            options[name]
            for name in (
                "repository", "github_labels", "has_fix", "created_after", "created_before",
                "query", "sample", "per_repository", "pilot", "stratified",
            )
        ) or options["state"] != "any" or options["overlap"] != 1.0  # fmt: skip
        if by_rule and (options["issues"] or options["all"]):
            raise CommandError("Give either --issues/--all or a selection rule, not both.")
        try:
            version = codebook_version_get(name=options["codebook"], label=options["label"])
            if by_rule:
                study = study_setup(
                    slug=options["slug"],
                    name=options["name"] or options["slug"],
                    codebook_version=version,
                    rule=_rule(options),
                    rounds=[
                        *(
                            [RoundPlan("Pilot", "pilot", options["pilot"])]
                            if options["pilot"]
                            else []
                        ),
                        RoundPlan("Main"),
                    ],
                    k=options["k"],
                    overlap=options["overlap"],
                    blind=not options["not_blind"],
                    resolution_rule=options["resolution"],
                    annotators=_users(options["annotators"]),
                    managers=_users(options["managers"]),
                    adjudicators=_users(options["adjudicators"]),
                )
                self._report(study)
                return
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
        self._report(study)

    def _report(self, study) -> None:
        if study.sampling:
            drawn = ", ".join(f"{repo} {n}" for repo, n in study.sampling["sampled"].items())
            self.stdout.write(
                f"Drew {sum(study.sampling['sampled'].values())} of "
                f"{sum(study.sampling['candidates'].values())} matching issues ({drawn}), "
                f"seed {study.sampling['seed']}."
            )
        self.stdout.write(
            f"Study {study.slug}: {study.items.count()} items, "
            f"{study.items.filter(assignments__isnull=False).distinct().count()} assigned."
        )


def iso_date(text: str) -> datetime:
    """An ISO 8601 date or time; without a zone it is taken as UTC."""
    try:
        return iso_time_parse(text, naive_zone=UTC)
    except ValueError as error:
        raise ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from error


def _rounds(pilot: int | None) -> list[RoundPlan]:
    pilot_round = [RoundPlan("Pilot", "pilot", pilot)] if pilot else []
    return [*pilot_round, RoundPlan("Main")]


def _rule(options: dict) -> SamplingRule:
    if options["per_repository"] is not None:
        method = "stratified"
    elif options["sample"] is not None:
        method = "stratified" if options["stratified"] else "random"
    else:
        method = "all"
    return SamplingRule(
        selection=IssueSelection(
            repositories=tuple(options["repository"]),
            state=options["state"],
            labels=tuple(options["github_labels"]),
            labels_match=options["labels_match"],
            created_after=options["created_after"],
            created_before=options["created_before"],
            has_fix=True if options["has_fix"] else None,
            query=options["query"],
        ),
        method=method,
        size=options["sample"],
        per_repository=options["per_repository"],
        seed=options["seed"],
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
