import json

import yaml
from django.core.management.base import CommandError

from common.exceptions import ApplicationError
from common.management import CommandWithVersionOption
from taxonomy.codebook_file import codebook_spec_to_dict
from taxonomy.selectors import codebook_version_get, codebook_version_to_spec


class Command(CommandWithVersionOption):
    help = "Print a codebook version in the codebook file format."

    def add_arguments(self, parser) -> None:
        parser.add_argument("name")
        parser.add_argument("--version", dest="label", default=None)
        parser.add_argument(
            "--yaml", dest="as_yaml", action="store_true", help="YAML instead of JSON"
        )

    def handle(self, *args, name: str, label: str | None, as_yaml: bool, **options) -> None:
        try:
            version = codebook_version_get(name=name, label=label)
        except ApplicationError as error:
            raise CommandError(error.message) from error
        data = codebook_spec_to_dict(codebook_version_to_spec(version=version))
        if as_yaml:
            self.stdout.write(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
        else:
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False))
