from django.core.management.base import BaseCommand


class CommandWithVersionOption(BaseCommand):
    """A command whose own `--version` option (a codebook version) replaces Django's, which only
    prints the Django version."""

    def create_parser(self, prog_name: str, subcommand: str, **kwargs):
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)
