from django.core.management.base import CommandError

from common.exceptions import ApplicationError
from common.management import CommandWithVersionOption
from labeling.codebook_history import study_category_counts, study_category_counts_title
from labeling.models import Study
from taxonomy.codebook_file import EXPORT_FORMATS, codebook_spec_export
from taxonomy.selectors import codebook_version_get, codebook_version_to_spec


class Command(CommandWithVersionOption):
    help = (
        "Print a codebook version: the codebook file (JSON or YAML, which load_codebook reads) "
        "or Markdown for a paper's appendix (with --study, how often the study used each "
        "category)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--version", dest="label", default=None)
        parser.add_argument("--format", dest="export_format", choices=EXPORT_FORMATS)
        parser.add_argument(
            "--yaml", dest="as_yaml", action="store_true", help="the same as --format yaml"
        )
        parser.add_argument("--study", help="Markdown only: the counts of this study's labels")

    def handle(
        self,
        *args,
        name: str,
        label: str | None,
        export_format: str | None,
        as_yaml: bool,
        study: str | None,
        **options,
    ) -> None:
        if as_yaml and export_format not in (None, "yaml"):
            raise CommandError("--yaml and --format name two formats; give one.")
        export_format = export_format or ("yaml" if as_yaml else "json")
        try:
            version = codebook_version_get(name=name, label=label)
        except ApplicationError as error:
            raise CommandError(error.message) from error
        counts, counts_title = None, ""
        if study is not None:
            if export_format != "markdown":
                raise CommandError("--study adds counts to the Markdown export only.")
            found = Study.objects.select_related("codebook_version").filter(slug=study).first()
            if found is None:
                raise CommandError(f"No study {study!r}.")
            if found.codebook_version.codebook_id != version.codebook_id:
                raise CommandError(f"Study {study!r} does not use the codebook {name!r}.")
            counts = study_category_counts(study=found)
            counts_title = study_category_counts_title(study=found)
        self.stdout.write(
            codebook_spec_export(
                codebook_version_to_spec(version=version), export_format, counts, counts_title
            ),
            ending="",
        )
