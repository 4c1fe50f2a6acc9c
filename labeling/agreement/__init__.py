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
* ``report``: one dimension's report with every figure, its headline and warnings.
"""

from labeling.agreement.cohen import (
    WEIGHT_SCHEMES,
    cohen_kappa,
    kappa_from_confusion,
    kappa_standard_error,
    specific_agreement,
    wald_interval,
)
from labeling.agreement.fleiss import category_fleiss_kappas, fleiss_kappa, fleiss_kappa_gwet
from labeling.agreement.krippendorff import krippendorff_alpha, krippendorff_alpha_nominal
from labeling.agreement.numbers import CONFIDENCE_LEVEL
from labeling.agreement.ratings import NONE_APPLIES
from labeling.agreement.report import (
    DEFAULT_MIN_PAIR_ITEMS,
    HEADLINE_LABELS,
    HEADLINE_SHORT_LABELS,
    MIN_ITEMS_FOR_KAPPA,
    agreement_warnings,
    dimension_agreement,
    headline_of,
    interpret_kappa,
    kappa_undetermined_reason,
)
from labeling.agreement.sets import jaccard_distance, masi_distance

__all__ = [
    "CONFIDENCE_LEVEL",
    "DEFAULT_MIN_PAIR_ITEMS",
    "HEADLINE_LABELS",
    "HEADLINE_SHORT_LABELS",
    "MIN_ITEMS_FOR_KAPPA",
    "NONE_APPLIES",
    "WEIGHT_SCHEMES",
    "agreement_warnings",
    "category_fleiss_kappas",
    "cohen_kappa",
    "dimension_agreement",
    "fleiss_kappa",
    "fleiss_kappa_gwet",
    "headline_of",
    "interpret_kappa",
    "jaccard_distance",
    "kappa_from_confusion",
    "kappa_standard_error",
    "kappa_undetermined_reason",
    "krippendorff_alpha",
    "krippendorff_alpha_nominal",
    "masi_distance",
    "specific_agreement",
    "wald_interval",
]
