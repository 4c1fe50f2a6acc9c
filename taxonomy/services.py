from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError
from taxonomy.codebook_file import CodebookSpec, codebook_parse
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension


@transaction.atomic
def codebook_load(*, data: dict, publish: bool = False) -> tuple[CodebookVersion, bool]:
    """Store a codebook file as a version of its codebook.

    Loading the same content again returns the stored version unchanged. A draft version with the
    same label is replaced; a published version is immutable, so different content under its label
    is an error. Returns the version and whether anything was written.
    """
    spec = codebook_parse(data)
    codebook, _ = Codebook.objects.get_or_create(
        name=spec.name, defaults={"description": spec.description}
    )
    existing = (
        CodebookVersion.objects.select_for_update()
        .filter(codebook=codebook, label=spec.version)
        .first()
    )
    if existing is not None:
        if existing.content_hash == spec.content_hash:
            if publish and not existing.is_published:
                codebook_version_publish(version=existing)
                return existing, True
            return existing, False
        if existing.is_published:
            raise ApplicationError(
                f"Version {spec.version} of codebook {spec.name!r} is published and cannot change; "
                "give the file a new version."
            )
        existing.delete()
    version = _version_create(codebook=codebook, spec=spec)
    if codebook.description != spec.description and spec.description:
        codebook.description = spec.description
        codebook.save(update_fields=["description", "updated_at"])
    if publish:
        codebook_version_publish(version=version)
    return version, True


def _version_create(*, codebook: Codebook, spec: CodebookSpec) -> CodebookVersion:
    version = CodebookVersion.objects.create(
        codebook=codebook,
        label=spec.version,
        content_hash=spec.content_hash,
        description=spec.description,
        metadata=spec.metadata,
    )
    for dimension_position, dimension_spec in enumerate(spec.dimensions):
        dimension = Dimension.objects.create(
            version=version,
            key=dimension_spec.key,
            name=dimension_spec.name,
            description=dimension_spec.description,
            multi_label=dimension_spec.multi_label,
            required=dimension_spec.required,
            ordinal=dimension_spec.ordinal,
            applies_when=dimension_spec.applies_when,
            position=dimension_position,
            metadata=dimension_spec.metadata,
        )
        by_key: dict[str, Category] = {}
        # Parents come first in the spec, so each parent exists before its children.
        for category_position, category_spec in enumerate(dimension_spec.categories):
            by_key[category_spec.key] = Category.objects.create(
                dimension=dimension,
                parent=by_key.get(category_spec.parent_key) if category_spec.parent_key else None,
                key=category_spec.key,
                name=category_spec.name,
                definition=category_spec.definition,
                include=category_spec.include,
                exclude=category_spec.exclude,
                examples=category_spec.examples,
                position=category_position,
                deprecated=category_spec.deprecated,
                metadata=category_spec.metadata,
            )
    return version


def codebook_version_publish(*, version: CodebookVersion) -> CodebookVersion:
    """Freeze a version: from now on studies may pin it and nothing in it changes."""
    if version.is_published:
        return version
    version.status = CodebookVersion.Status.PUBLISHED
    version.published_at = timezone.now()
    version.save(update_fields=["status", "published_at", "updated_at"])
    return version
