"""Where the documentation explains each figure of the agreement report.

The methods page (docs/agreement-methods.md) gives every figure a heading with a fixed anchor;
pages and reports link a figure to it with `methods_url`. tests/test_docs.py builds the site and
fails when an anchor named here is missing from the page, so that no link dangles.
"""

from django.conf import settings

# The methods page, relative to the documentation site's root (MkDocs' directory URLs).
METHODS_PAGE = "agreement-methods/"

# Report key -> anchor on the methods page. Keys are the report's own; those nested under
# `per_category` repeat top-level names (kappa, fleiss_kappa), so they carry the prefix.
METHODS_ANCHORS: dict[str, str] = {
    "n_items": "what-is-counted",
    "n_annotators": "what-is-counted",
    "applies_when": "applies-when",
    "units": "notation",
    "percent_agreement": "percent-agreement",
    "percent_agreement_all": "percent-agreement-all",
    "cohen_kappa": "cohen-kappa",
    "kappa_weights": "weighted-kappa",
    "min_pair_items": "minimum-overlap",
    "mean": "kappa-means",
    "weighted_mean": "kappa-means",
    "ase": "asymptotic-standard-error",
    "ci95_wald": "asymptotic-standard-error",
    "ci95": "bootstrap-intervals",
    "weighted_ci95": "bootstrap-intervals",
    "fleiss_kappa_ci95": "bootstrap-intervals",
    "krippendorff_alpha_ci95": "bootstrap-intervals",
    "headline": "headline",
    "interpretation": "interpretation",
    "fleiss_kappa": "fleiss-kappa",
    "fleiss_kappa_gwet": "fleiss-kappa-gwet",
    "krippendorff_alpha": "krippendorff-alpha",
    "krippendorff_alpha_ordinal": "krippendorff-alpha-ordinal",
    "krippendorff_alpha_interval": "krippendorff-alpha-interval",
    "krippendorff_alpha_ratio": "krippendorff-alpha-ratio",
    "krippendorff_alpha_jaccard": "krippendorff-alpha-jaccard",
    "mean_masi_similarity": "mean-masi-similarity",
    "mean_jaccard": "mean-jaccard",
    "exact_set_agreement": "exact-set-agreement",
    "per_category": "per-category",
    "per_category.kappa": "per-category-kappa",
    "per_category.fleiss_kappa": "per-category-fleiss-kappa",
    "per_category.specific_agreement": "specific-agreement",
    "per_category.support": "support",
    "warnings": "warnings",
    "warning_kinds": "warnings",
    "reporting": "reporting",
    "references": "references",
}


def methods_url(figure_key: str | None = None) -> str:
    """The methods page (no key) or the section of one report figure, under settings.DOCS_URL
    (the app's own /docs/, or wherever the site is published). An unknown key is a KeyError:
    a link to a section that does not exist is a bug to catch in tests, not to hide."""
    page = settings.DOCS_URL.rstrip("/") + "/" + METHODS_PAGE
    if figure_key is None:
        return page
    return f"{page}#{METHODS_ANCHORS[figure_key]}"
