import argparse
import json
from datetime import UTC, datetime

from django.core.management.base import BaseCommand, CommandError

from common.exceptions import ApplicationError
from common.tables import Table, table_display_rows
from common.text import iso_time_parse
from labeling.agreement import DEFAULT_MIN_PAIR_ITEMS
from labeling.agreement_report import (
    MAX_BOOTSTRAP,
    MAX_MIN_PAIR_ITEMS,
    PAGE_BOOTSTRAP,
    LabelTableFilter,
    agreement_query_check,
    study_agreement_report,
)
from labeling.agreement_tables import dimension_table
from labeling.models import Study


class Command(BaseCommand):
    help = (
        "Inter-annotator agreement of a study, per dimension: a table with the pairs counted, "
        "the mean and weighted Cohen's kappa (and their 95% intervals with --intervals), the "
        "filters and the warnings; or the full report as JSON."
    )

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
            "--min-pair-items",
            type=int,
            default=DEFAULT_MIN_PAIR_ITEMS,
            help=(
                "a pair of annotators counts toward the mean kappa when it shares at least this "
                f"many items (default {DEFAULT_MIN_PAIR_ITEMS}, at most {MAX_MIN_PAIR_ITEMS})"
            ),
        )
        parser.add_argument(
            "--intervals",
            action="store_true",
            help=f"print 95%% intervals (bootstrap, {PAGE_BOOTSTRAP} resamples unless --bootstrap)",
        )
        parser.add_argument(
            "--bootstrap",
            type=int,
            help=f"resamples for 95%% intervals, printed when > 0 (at most {MAX_BOOTSTRAP})",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="the full report as JSON")

    def handle(self, *args, **options) -> None:
        study = Study.objects.filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"No study {options['study']!r}.")
        bootstrap = options["bootstrap"]
        if bootstrap is None:
            bootstrap = PAGE_BOOTSTRAP if options["intervals"] else 0
        elif options["intervals"] and bootstrap == 0:
            raise CommandError("--intervals needs --bootstrap above 0 (or no --bootstrap).")
        if not 0 <= bootstrap <= MAX_BOOTSTRAP:
            raise CommandError(f"--bootstrap must be between 0 and {MAX_BOOTSTRAP}.")
        if not 1 <= options["min_pair_items"] <= MAX_MIN_PAIR_ITEMS:
            raise CommandError(f"--min-pair-items must be between 1 and {MAX_MIN_PAIR_ITEMS}.")
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
                bootstrap=bootstrap,
                min_pair_items=options["min_pair_items"],
                weights=options["weights"],
            )
        except ApplicationError as error:
            raise CommandError(error.message) from error
        report = study_agreement_report(
            study=study,
            dimension_keys=options["dimension"],
            filters=filters,
            level=options["level"],
            weights=options["weights"],
            bootstrap=bootstrap,
            seed=options["seed"],
            min_pair_items=options["min_pair_items"],
        )
        if options["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        self.stdout.write(_as_text(dimension_table(report)))


def _as_text(table: Table) -> str:
    """A table for a terminal: its title and caption, aligned columns, then its notes."""
    lines = [table.title, table.caption, ""]
    header = [column.title for column in table.columns]
    cells = table_display_rows(table)
    widths = [max(len(text) for text in column) for column in zip(header, *cells, strict=True)]
    for row in (header, *cells):
        lines.append(
            "  ".join(
                text.ljust(width) if column.alignment == "left" else text.rjust(width)
                for text, width, column in zip(row, widths, table.columns, strict=True)
            ).rstrip()
        )
    return "\n".join([*lines, "", *table.notes])


def _moment(text: str) -> datetime:
    try:
        return iso_time_parse(text, naive_zone=UTC)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 date or time: {text!r}") from error
