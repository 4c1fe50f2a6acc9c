from collections.abc import Collection, Mapping

from django.db import models

from common.models import TimestampedModel


class Codebook(TimestampedModel):
    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class CodebookVersion(TimestampedModel):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        PUBLISHED = "published", "Published"

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="versions")
    label = models.CharField(max_length=50)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    content_hash = models.CharField(max_length=64)
    published_at = models.DateTimeField(null=True, blank=True)
    notes = models.TextField(blank=True)
    description = models.TextField(blank=True)
    # Keys of the codebook file that the format does not name (item_metadata, ...), kept as given.
    metadata = models.JSONField(default=dict, blank=True)
    # The version a draft was copied from in the editor; its categories map onto this one's
    # (Category.derived_from and CategoryMapping), which is how a study moves between them.
    based_on = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="derived_versions"
    )

    class Meta:
        ordering = ["codebook__name", "-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["codebook", "label"], name="unique_codebook_version"),
            models.CheckConstraint(
                condition=models.Q(status="draft") | models.Q(published_at__isnull=False),
                name="published_version_has_date",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.codebook.name} {self.label}"

    @property
    def is_published(self) -> bool:
        return self.status == self.Status.PUBLISHED


class Dimension(models.Model):
    version = models.ForeignKey(
        CodebookVersion, on_delete=models.CASCADE, related_name="dimensions"
    )
    key = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    multi_label = models.BooleanField(default=False)
    required = models.BooleanField(default=True)
    ordinal = models.BooleanField(default=False)
    # {"screening": ["include"]}: answered only when an earlier dimension has one of these.
    applies_when = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)
    metadata = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(fields=["version", "key"], name="unique_dimension_key"),
        ]

    def __str__(self) -> str:
        return self.name

    def applies_given(self, chosen: Mapping[str, Collection[str]]) -> bool:
        """Whether this dimension is to be answered, given the category keys chosen on other
        dimensions (`applies_when`). A dimension not in `chosen` at all (labels imported from a
        sheet without screening) does not exclude it."""
        return all(
            other_key not in chosen or set(chosen[other_key]) & set(category_keys)
            for other_key, category_keys in self.applies_when.items()
        )

    def applicability_table(self) -> dict[str, dict[str, bool]]:
        """`applies_given` spelled out for a page, so that the browser looks answers up instead of
        keeping a copy of the rule: per condition dimension, whether this dimension applies when
        that one has no category ("") and when it has each named category. A category not
        listed does not make it apply; conditions on several dimensions must all hold."""
        return {
            other_key: {
                "": self.applies_given({other_key: ()}),
                **{key: self.applies_given({other_key: (key,)}) for key in category_keys},
            }
            for other_key, category_keys in self.applies_when.items()
        }


class Category(models.Model):
    dimension = models.ForeignKey(Dimension, on_delete=models.CASCADE, related_name="categories")
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    key = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    include = models.TextField(blank=True)
    exclude = models.TextField(blank=True)
    examples = models.JSONField(default=list, blank=True)
    position = models.PositiveIntegerField(default=0)
    deprecated = models.BooleanField(default=False)
    # Provenance of the category (source, status) and any other key of the file.
    metadata = models.JSONField(default=dict, blank=True)
    # The category of the parent version (CodebookVersion.based_on) this row was copied from:
    # the same category across versions, whatever its key or name became (a rename).
    derived_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="derived"
    )

    class Meta:
        ordering = ["dimension", "position"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(fields=["dimension", "key"], name="unique_category_key"),
            models.CheckConstraint(
                condition=~models.Q(parent=models.F("id")), name="category_not_own_parent"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class CategoryMapping(models.Model):
    """How a category of one version becomes categories of a later version (`to_version`, whose
    `based_on` is the category's version). A category kept in the later version (the same row
    lineage, Category.derived_from) needs no declared mapping; merges, splits and removals are
    declared by a manager, renames are recorded when the version is published. A removal has no
    target; a split has one row per part."""

    class Kind(models.TextChoices):
        RENAME = "rename", "Rename"
        MERGE = "merge", "Merge"
        SPLIT = "split", "Split"
        REMOVE = "remove", "Remove"

    from_category = models.ForeignKey(
        Category, on_delete=models.CASCADE, related_name="mappings_out"
    )
    to_category = models.ForeignKey(
        Category, null=True, blank=True, on_delete=models.CASCADE, related_name="mappings_in"
    )
    kind = models.CharField(max_length=10, choices=Kind.choices)
    to_version = models.ForeignKey(
        CodebookVersion, on_delete=models.CASCADE, related_name="mappings_in"
    )

    class Meta:
        ordering = ["to_version", "from_category__dimension__position", "from_category__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["from_category", "to_category"], name="unique_category_mapping"
            ),
            models.UniqueConstraint(
                fields=["from_category", "to_version"],
                condition=models.Q(to_category__isnull=True),
                name="unique_category_removal",
            ),
            models.CheckConstraint(
                condition=models.Q(kind="remove", to_category__isnull=True)
                | (~models.Q(kind="remove") & models.Q(to_category__isnull=False)),
                name="category_mapping_target_unless_removed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.from_category_id} -> {self.to_category_id}"
