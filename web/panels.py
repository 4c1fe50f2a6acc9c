"""The labels side of the labeling page, shaped for its template.

A dimension's category tree is the same for every item of a codebook version, and versions do
not change once published, so its HTML is rendered once per (dimension, content hash) and kept in
the cache; each page view only marks the chosen inputs. The keys also name the templates as this
process has them, so that a release that changes them does not serve the HTML of the one before.
"""

import functools
import hashlib
import json

from django.core.cache import cache
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template.loader import get_template, render_to_string
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from labeling.selectors import LabelingPage
from taxonomy.models import Category, CodebookVersion, Dimension
from taxonomy.selectors import categories_of_version, category_depths

CACHE_SECONDS = 24 * 60 * 60


CATEGORIES_TEMPLATE = "web/_categories.html"
FIELDSETS_TEMPLATE = "web/_dimension_fieldsets.html"


@functools.cache
def _template_digest(*names: str) -> str:
    """A short digest of the templates' source, once per process (a release starts new ones):
    reading them on each view cost 50 µs of a page's 9 ms."""
    digest = hashlib.sha256()
    for name in names:
        digest.update(get_template(name).template.source.encode())
    return digest.hexdigest()[:12]


@receiver(setting_changed)
def _templates_changed(*, setting: str, **kwargs) -> None:
    if setting == "TEMPLATES":
        _template_digest.cache_clear()


def _categories_key(dimension: Dimension, content_hash: str, templates: str) -> str:
    return f"labeling:categories:{dimension.id}:{content_hash}:{templates}"


def _categories_html(dimensions: list[Dimension], version: CodebookVersion) -> dict[int, str]:
    """Each dimension's category tree as HTML, by dimension id: one round trip to the cache
    for all of them (a page view asked once per dimension before), the missing ones rendered
    and stored."""
    templates = _template_digest(CATEGORIES_TEMPLATE)
    keys = {
        dimension.id: _categories_key(dimension, version.content_hash, templates)
        for dimension in dimensions
    }
    found = cache.get_many(list(keys.values()))
    html = {}
    missing = {}
    by_dimension: dict[int, list[Category]] | None = None
    for dimension in dimensions:
        key = keys[dimension.id]
        if key in found:
            html[dimension.id] = found[key]
            continue
        if by_dimension is None:
            # Every category of the version in one read (kept for a published version, where
            # the saves find them too), not one query per dimension.
            by_dimension = {}
            for category in categories_of_version(version=version):
                by_dimension.setdefault(category.dimension_id, []).append(category)
        categories = by_dimension.get(dimension.id, [])
        depth = category_depths(categories)
        entries = [{"category": c, "depth": depth[c.id]} for c in categories]
        html[dimension.id] = missing[key] = render_to_string(
            CATEGORIES_TEMPLATE, {"dimension": dimension, "categories": entries}
        )
    if missing:
        cache.set_many(missing, CACHE_SECONDS)
    return html


def _with_chosen(html: str, keys: set[str]) -> SafeString:
    # Keys are slugs (checked when the codebook is loaded), so the marker is unambiguous.
    for key in keys:
        # A deprecated category already chosen stays choosable, so that re-saving keeps it.
        enabled = html.replace(f'data-key="{key}" disabled', f'data-key="{key}" checked', 1)
        html = (
            enabled
            if enabled != html
            else html.replace(f'data-key="{key}"', f'data-key="{key}" checked', 1)
        )
    return mark_safe(html)  # noqa: S308 (rendered by the template engine with escaping)


def dimension_rows(page: LabelingPage, *, version: CodebookVersion) -> list[dict]:
    """Each dimension with its categories' HTML (chosen ones checked) and the annotation."""
    chosen_by_key: dict[str, set[str]] = {}
    for dimension in page.dimensions:
        annotation = page.annotations.get(dimension.id)
        chosen_by_key[dimension.key] = (
            {c.key for c in annotation.categories.all()} if annotation else set()
        )
    trees = _categories_html(page.dimensions, version)
    # The page sends every dimension when it saves, so an unanswered one counts as "no
    # category" here exactly as it does for the service that checks a submit.
    return [
        {
            "dimension": dimension,
            "annotation": page.annotations.get(dimension.id),
            "categories_html": _recheck_note(page.annotations.get(dimension.id))
            + _with_chosen(trees[dimension.id], chosen_by_key[dimension.key]),
            "applies": dimension.applies_given(chosen_by_key),
            "applicability_json": json.dumps(dimension.applicability_table()),
            "condition_text": _condition_text(dimension, page.dimensions),
        }
        for dimension in page.dimensions
    ]


def dimension_fieldsets(
    page: LabelingPage, *, version: CodebookVersion, locked: bool
) -> SafeString:
    """The labeling form's fieldsets. Those of an item with no labels yet (the usual view: the
    next item) are the same for every item of a published version and a study's required
    dimensions, so they are rendered once and kept in the cache; the others are rendered."""
    if page.annotations or locked or not version.is_published:
        return _fieldsets_render(page, version=version, locked=locked)
    # What the fieldsets depend on besides the version: each dimension's `required`, which a
    # study may set (labeling.selectors.study_dimensions).
    required = ",".join(f"{d.id}:{d.required:d}" for d in page.dimensions)
    digest = hashlib.sha256(required.encode()).hexdigest()[:16]
    templates = _template_digest(FIELDSETS_TEMPLATE, CATEGORIES_TEMPLATE)
    key = f"labeling:fieldsets:{version.id}:{version.content_hash}:{digest}:{templates}"
    html = cache.get(key)
    if html is None:
        html = _fieldsets_render(page, version=version, locked=False)
        cache.set(key, str(html), CACHE_SECONDS)
    return mark_safe(html)  # noqa: S308 (rendered by the template engine with escaping)


def _fieldsets_render(page: LabelingPage, *, version: CodebookVersion, locked: bool) -> SafeString:
    return mark_safe(  # noqa: S308 (rendered by the template engine with escaping)
        render_to_string(
            FIELDSETS_TEMPLATE,
            {"dimension_rows": dimension_rows(page, version=version), "locked": locked},
        )
    )


def _recheck_note(annotation) -> SafeString:
    """What a codebook change asks the annotator to re-check on this dimension, first in its
    list (the label keeps its old category, which the tree of the new version cannot show)."""
    if annotation is None or annotation.needs_review_since is None:
        return mark_safe("")
    return format_html(
        '<li class="recheck" role="note"><strong>To re-check:</strong> {} '
        '<span class="muted">(your label: {})</span></li>',
        annotation.review_note,
        ", ".join(sorted(c.key for c in annotation.categories.all())) or "none",
    )


def _condition_text(dimension: Dimension, dimensions: list[Dimension]) -> str:
    """ "Screening: include" for a dimension that applies only after an earlier answer."""
    names = {d.key: d.name for d in dimensions}
    return "; ".join(
        f"{names.get(other_key, other_key)}: {' or '.join(keys)}"
        for other_key, keys in dimension.applies_when.items()
    )
