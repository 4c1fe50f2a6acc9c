"""Inter-annotator agreement: pure numerical code (numpy and scikit-learn, no Django). Rating
rows go in, plain Python numbers come out, so views, exports and notebooks share one
implementation.

One module per family, each small enough to read against its paper:

* ``cohen``: Cohen's kappa, weighted kappa, its standard error, specific agreement;
* ``fleiss``: Fleiss' kappa, its category-specific kappas, Gwet's generalisation;
* ``krippendorff``: Krippendorff's alpha at the nominal, ordinal, interval and ratio levels;
* ``sets``: label-set distances (MASI, Jaccard) and alpha over label sets;
* ``intervals``: the percentile bootstrap over items;
* ``ratings``: rating rows coded into arrays;
* ``label_table``: a study's label rows as numpy columns, grouped by (item, annotator) pair;
* ``numbers``: the small numeric helpers the families share;
* ``report``: one dimension's report with every figure, its headline and warnings;
* ``wording``: how a report reads (the defaults, the Landis & Koch wording, the warnings and
  the headline), in plain Python.

The package imports a module when one of its names is first used (PEP 562), so that the pages,
forms and serializers that need only the wording and its defaults do not import numpy with
them: numpy was a tenth of the web server's start.
"""

from importlib import import_module
from typing import Any

# The public names of each module, as the package imported them before it imported lazily.
_NAMES = {
    "cohen": (
        "WEIGHT_SCHEMES",
        "cohen_kappa",
        "kappa_from_confusion",
        "kappa_standard_error",
        "specific_agreement",
        "wald_interval",
    ),
    "fleiss": ("category_fleiss_kappas", "fleiss_kappa", "fleiss_kappa_gwet"),
    "krippendorff": ("krippendorff_alpha", "krippendorff_alpha_nominal"),
    "numbers": ("CONFIDENCE_LEVEL",),
    "ratings": ("NONE_APPLIES",),
    "report": ("dimension_agreement",),
    "sets": ("jaccard_distance", "masi_distance"),
    "wording": (
        "DEFAULT_MIN_PAIR_ITEMS",
        "HEADLINE_LABELS",
        "HEADLINE_SHORT_LABELS",
        "MIN_ITEMS_FOR_KAPPA",
        "agreement_warnings",
        "headline_of",
        "interpret_kappa",
        "kappa_undetermined_reason",
    ),
}
_MODULE_OF = {name: module for module, names in _NAMES.items() for name in names}
__all__ = sorted(_MODULE_OF)


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
