"""Figures other apps add to an agreement report's dimensions (machines/ adds its annotators'
agreement with people and gold): the apps above labeling may import it, not the other way
round. Each app registers the dotted path of its function when Django starts; the report
imports and calls it (`labeling.agreement_report`) with the study, the report's label tables,
its filters, its level and its dimensions, which it extends in place; human figures stay
human-only.

Paths rather than functions, in a module of their own: registering a function meant importing
the agreement and numpy into every process at its start, a tenth of it, for the few that
report agreement."""

REPORT_EXTENSIONS: list[str] = []


def report_extension_register(path: str) -> None:
    """Register once, however often Django starts the app (tests may)."""
    if path not in REPORT_EXTENSIONS:
        REPORT_EXTENSIONS.append(path)
