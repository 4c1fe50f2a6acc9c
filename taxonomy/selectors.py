import copy
from collections.abc import Callable, Iterable, Sequence

from django.core.cache import cache
from django.db.models import Prefetch, QuerySet

from common.exceptions import ApplicationError
from taxonomy.codebook_file import CategorySpec, CodebookSpec, DimensionSpec
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension


def codebook_list() -> QuerySet[Codebook]:
    """Every codebook by name, with its versions (newest first) and what each was based on."""
    return Codebook.objects.prefetch_related(
        Prefetch("versions", queryset=CodebookVersion.objects.select_related("based_on"))
    ).order_by("name")


def codebook_version_list_published() -> QuerySet[CodebookVersion]:
    """The versions a study may pin (published ones never change), by codebook, newest first."""
    return (
        CodebookVersion.objects.filter(status=CodebookVersion.Status.PUBLISHED)
        .select_related("codebook")
        .order_by("codebook__name", "-published_at")
    )


def codebook_version_get(*, name: str, label: str | None = None) -> CodebookVersion:
    """A version by label, or else the newest published version (the newest draft if none is)."""
    versions = CodebookVersion.objects.select_related("codebook").filter(codebook__name=name)
    if label is not None:
        version = versions.filter(label=label).first()
    else:
        version = (
            versions.filter(status=CodebookVersion.Status.PUBLISHED)
            .order_by("-published_at")
            .first()
            or versions.order_by("-created_at").first()
        )
    if version is None:
        wanted = f"version {label} of " if label else ""
        raise ApplicationError(f"No {wanted}codebook named {name!r}.")
    return version


def dimensions_of(*, version_id: int) -> list[Dimension]:
    """The dimensions of a version in order, without their categories (one query)."""
    return list(Dimension.objects.filter(version_id=version_id).order_by("position"))


# What is read of published versions (which never change), kept in the shared cache and also
# in this process: a labeling request asks for a version's dimensions two or three times and
# checks every save against its categories, and each trip to the shared cache (Redis in
# production) costs a round trip and the unpickling of model instances. The bound only keeps a
# long-lived process from collecting versions without end.
_PUBLISHED: dict[str, tuple] = {}
_PUBLISHED_MAX = 512
_PUBLISHED_CACHE_SECONDS = 24 * 60 * 60


def _published_kept(version: CodebookVersion, what: str, read: Callable[[], list]) -> tuple:
    """`read()` of a published version, from this process, else the shared cache, else the
    database. The instances are shared by the process's requests: never change one."""
    key = f"taxonomy:{what}:{version.id}:{version.content_hash}"
    kept = _PUBLISHED.get(key)
    if kept is None:
        kept = tuple(cache.get_or_set(key, read, _PUBLISHED_CACHE_SECONDS))
        if len(_PUBLISHED) >= _PUBLISHED_MAX:
            _PUBLISHED.clear()
        _PUBLISHED[key] = kept
    return kept


def dimensions_of_version(*, version: CodebookVersion) -> list[Dimension]:
    """`dimensions_of`, kept for a published version (which never changes)."""
    if not version.is_published:
        return dimensions_of(version_id=version.id)
    dimensions = _published_kept(
        version, "dimensions", lambda: dimensions_of(version_id=version.id)
    )
    # Instances of the caller's own, as the shared cache gives: none is shared by two requests.
    return [copy.copy(dimension) for dimension in dimensions]


def categories_of(*, version_id: int) -> list[Category]:
    """Every category of a version, by dimension and position (one query)."""
    return list(
        Category.objects.filter(dimension__version_id=version_id).order_by(
            "dimension__position", "position"
        )
    )


def categories_of_version(*, version: CodebookVersion) -> Sequence[Category]:
    """`categories_of`, kept for a published version (which never changes): a label save checks
    the chosen keys against them, a query a save before. The instances are shared by the
    requests of the process: read them, copy one to change it."""
    if not version.is_published:
        return categories_of(version_id=version.id)
    return _published_kept(version, "categories", lambda: categories_of(version_id=version.id))


def categories_by_id(*, version: CodebookVersion, ids: Iterable[int]) -> dict[int, Category]:
    """The categories `ids`, from the version as `categories_of_version` keeps them (read them,
    never change one); one of another version, which a codebook change left on a label to be
    re-checked, is read besides."""
    kept = {category.pk: category for category in categories_of_version(version=version)}
    others = set(ids) - kept.keys()
    if others:
        kept |= Category.objects.in_bulk(others)
    return kept


def category_codebook_order(category: Category) -> tuple[int, int]:
    """Where a category comes among those chosen together: by its position in the codebook."""
    return (category.position, category.pk)


def categories_by_key(*, version: CodebookVersion) -> dict[tuple[int, str], Category]:
    """The version's categories by (dimension id, key), as `categories_of_version` keeps them:
    read them, never change one."""
    return {(c.dimension_id, c.key): c for c in categories_of_version(version=version)}


def category_depths(categories: Iterable[Category]) -> dict[int, int]:
    """Depth of each category in its tree (0 for top level), by id. Parents come before their
    children in `position` order, as the codebook loader stores them."""
    depth: dict[int, int] = {}
    for category in categories:
        depth[category.id] = depth[category.parent_id] + 1 if category.parent_id else 0
    return depth


def dimensions_with_categories(*, version_id: int) -> list[Dimension]:
    """The dimensions of a version in order, each with its categories prefetched (two queries)."""
    return list(
        Dimension.objects.filter(version_id=version_id)
        .order_by("position")
        .prefetch_related(Prefetch("categories", queryset=Category.objects.order_by("position")))
    )


def codebook_version_to_spec(*, version: CodebookVersion) -> CodebookSpec:
    dimension_specs = []
    for dimension in dimensions_with_categories(version_id=version.id):
        categories = list(dimension.categories.all())
        key_by_id = {category.id: category.key for category in categories}
        dimension_specs.append(
            DimensionSpec(
                key=dimension.key,
                name=dimension.name,
                description=dimension.description,
                multi_label=dimension.multi_label,
                required=dimension.required,
                ordinal=dimension.ordinal,
                applies_when=dimension.applies_when,
                metadata=dimension.metadata,
                categories=[
                    CategorySpec(
                        key=category.key,
                        name=category.name,
                        parent_key=key_by_id.get(category.parent_id),
                        definition=category.definition,
                        include=category.include,
                        exclude=category.exclude,
                        examples=category.examples,
                        deprecated=category.deprecated,
                        metadata=category.metadata,
                    )
                    for category in categories
                ],
            )
        )
    return CodebookSpec(
        name=version.codebook.name,
        version=version.label,
        description=version.description,
        metadata=version.metadata,
        dimensions=dimension_specs,
    )
