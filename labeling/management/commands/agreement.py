import argparse
import json
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from common.text import iso_time_parse
from labeling.agreement_report import (
    MAX_BOOTSTRAP,
    LabelTableFilter,
    agreement_query_check,
    report_rows,
    study_agreement_report,
)
from labeling.models import Study


class Command(BaseCommand):
    help = "Inter-annotator agreement of a study, per dimension (a table, or JSON)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", required=True)
        parser.add_argument("--dimension", action="append", help="dimension key (repeatable)")
        parser.add_argument("--round", dest="round_name", help="round name")
        parser.add_argument("--repository", help="owner/name")
        parser.add_argument("--since", type=_moment, help="labels submitted at or after (ISO)")
        parser.add_argument("--until", type=_moment, help="labels submitted before (ISO)")
        parser.add_argument("--level", type=int, help="roll categories up to this tree level")
        parser.add_argument("--weights", choices=["linear", "quadratic"])
        parser.add_argument(
            "--bootstrap",
            type=int,
            default=0,
            help=f"resamples for 95%% CIs (at most {MAX_BOOTSTRAP})",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="the full report as JSON")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        if not 0 <= options["bootstrap"] <= MAX_BOOTSTRAP:
            raise CommandError(f"--bootstrap must be between 0 and {MAX_BOOTSTRAP}.")
        filters = LabelTableFilter(
            round_name=options["round_name"],
            repository=options["repository"],
            submitted_after=options["since"],
            submitted_before=options["until"],
        )
        try:
            agreement_query_check(
                study=study,
                dimension_keys=options["dimension"],
                filters=filters,
                bootstrap=options["bootstrap"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        report = study_agreement_report(
            study=study,
            dimension_keys=options["dimension"],
            filters=filters,
            level=options["level"],
            weights=options["weights"],
            bootstrap=options["bootstrap"],
            seed=options["seed"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(
            f"{'dimension':<22} {'items':>5} {'%agree':>7} {'kappa':>7} {'fleiss':>7} "
            f"{'alpha':>7}  wording"
        )
        for row in report_rows(report):
            self.stdout.write(
                f"{row['dimension']:<22} {row['n_items']:>5} {_number(row['percent_agreement'])} "
                f"{_number(row['cohen_kappa'])} {_number(row['fleiss_kappa'])} "
                f"{_number(row['krippendorff_alpha'])}  {row['interpretation'] or '-'}"
            )


def _moment(text: str) -> datetime:
    try:
        return iso_time_parse(text, naive_zone=UTC)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from error


def _number(value: float | None) -> str:
    return f"{value:>7.3f}" if value is not None else f"{'-':>7}"
