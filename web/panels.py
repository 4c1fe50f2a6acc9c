"""The labels side of the labeling page, shaped for its template.

A dimension's category tree is the same for every item of a codebook version, and versions do
not change once published, so its HTML is rendered once per (dimension, content hash) and kept in
the cache; each page view only marks the chosen inputs.
"""

import json

from django.core.cache import cache
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from labeling.selectors import LabelingPage
from taxonomy.models import Dimension
from taxonomy.selectors import category_depths

CACHE_SECONDS = 24 * 60 * 60


def _categories_html(dimension: Dimension, content_hash: str) -> str:
    def render() -> str:
        categories = list(dimension.categories.order_by("position"))
        depth = category_depths(categories)
        entries = [{"category": c, "depth": depth[c.id]} for c in categories]
        return render_to_string(
            "web/_categories.html", {"dimension": dimension, "categories": entries}
        )

    return cache.get_or_set(
        f"labeling:categories:{dimension.id}:{content_hash}", render, CACHE_SECONDS
    )


def _with_chosen(html: str, keys: set[str]) -> SafeString:
    # Keys are slugs (checked when the codebook is loaded), so the marker is unambiguous.
    for key in keys:
        html = html.replace(f'data-key="{key}"', f'data-key="{key}" checked', 1)
    return mark_safe(html)  # noqa: S308 (rendered by the template engine with escaping)


def dimension_rows(page: LabelingPage, *, content_hash: str) -> list[dict]:
    """Each dimension with its categories' HTML (chosen ones checked) and the annotation."""
    rows = []
    for dimension in page.dimensions:
        annotation = page.annotations.get(dimension.id)
        chosen = {c.key for c in annotation.categories.all()} if annotation else set()
        rows.append(
            {
                "dimension": dimension,
                "annotation": annotation,
                "categories_html": _with_chosen(_categories_html(dimension, content_hash), chosen),
                "applies_when_json": json.dumps(dimension.applies_when),
            }
        )
    return rows
