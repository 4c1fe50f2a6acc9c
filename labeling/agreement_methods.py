"""Where the documentation explains each agreement figure: its entry on the methods page of the
docs site (DOCS_URL), so that every figure the agreement page shows links to how it is computed."""

from django.conf import settings

# The report's figure keys, each with its anchor on the methods page.
METHODS_ANCHORS: dict[str, str] = {
    key: key.replace("_", "-")
    for key in (
        "percent_agreement",
        "cohen_kappa",
        "headline",
        "fleiss_kappa",
        "fleiss_kappa_gwet",
        "krippendorff_alpha",
        "krippendorff_alpha_ordinal",
        "krippendorff_alpha_interval",
        "krippendorff_alpha_ratio",
        "krippendorff_alpha_jaccard",
        "mean_jaccard",
        "mean_masi_similarity",
        "exact_set_agreement",
        "specific_agreement",
        "ase",
    )
}


def methods_url(figure_key: str) -> str:
    """The methods page entry of a figure of the agreement report (KeyError for a key the page
    does not document)."""
    base = settings.DOCS_URL.rstrip("/")  # "/docs" or "https://…/docs/" alike
    return f"{base}/agreement-methods/#{METHODS_ANCHORS[figure_key]}"
