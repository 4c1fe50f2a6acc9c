"""The codebook editor: drafts copied from published versions, edited, checked and published;
the mapping a manager declares, and what is refused (nothing changes then)."""

import pytest

from common.exceptions import ApplicationError
from taxonomy.drafts import (
    MappingEntry,
    codebook_draft_create,
    codebook_draft_publish,
    draft_category_add,
    draft_category_merge,
    draft_category_move,
    draft_category_remove,
    draft_category_reorder,
    draft_category_split,
    draft_category_update,
    draft_dimension_update,
    draft_mapping_declare,
    draft_problems,
)
from taxonomy.models import Category, CategoryMapping, CodebookVersion
from taxonomy.selectors import codebook_version_to_spec


def _keys(version, dimension="cause"):
    return list(
        Category.objects.filter(dimension__version=version, dimension__key=dimension)
        .order_by("position")
        .values_list("key", flat=True)
    )


def _dimension(version, key="cause"):
    return version.dimensions.get(key=key)


def _category(version, key, dimension="cause"):
    return Category.objects.get(dimension__version=version, dimension__key=dimension, key=key)


def _state(version):
    """Everything stored of a version's categories and mappings, to compare before and after."""
    return (
        list(
            Category.objects.filter(dimension__version=version)
            .order_by("id")
            .values_list("id", "key", "name", "parent_id", "position", "deprecated", "definition")
        ),
        list(CategoryMapping.objects.filter(to_version=version).values_list("id", "kind")),
    )


def test_a_draft_is_a_copy_with_the_same_content_and_new_rows(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    assert draft.status == CodebookVersion.Status.DRAFT and draft.based_on == small_version
    original = codebook_version_to_spec(version=small_version)
    copy = codebook_version_to_spec(version=draft)
    assert copy.dimensions == original.dimensions
    for category in Category.objects.filter(dimension__version=draft):
        assert category.derived_from.dimension.version == small_version
        assert category.derived_from.key == category.key


def test_a_draft_needs_a_new_label_and_a_published_parent(small_version):
    with pytest.raises(ApplicationError, match=r"has a version 1\.0 already"):
        codebook_draft_create(version=small_version, label="1.0")
    draft = codebook_draft_create(version=small_version, label="1.1")
    with pytest.raises(ApplicationError, match="draft itself"):
        codebook_draft_create(version=draft, label="1.2")


def test_editing_a_category_renames_it_and_keeps_its_lineage(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    api = _category(draft, "api")
    draft_category_update(
        category=api,
        key="api_misuse",
        name="API Misuse",
        definition="Calls an API against its contract.",
        include="wrong arguments",
        exclude="bugs inside the API",
        examples="microsoft/DeepSpeed#1\nhttps://github.com/NVIDIA/Megatron-LM/issues/2\n",
        deprecated=False,
    )
    api.refresh_from_db()
    assert (api.key, api.name, api.examples) == (
        "api_misuse",
        "API Misuse",
        ["microsoft/DeepSpeed#1", "https://github.com/NVIDIA/Megatron-LM/issues/2"],
    )
    assert api.derived_from == _category(small_version, "api")
    # The published version did not change.
    assert _keys(small_version)[0] == "api"


def test_add_move_and_reorder_keep_parents_before_children(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    dimension = _dimension(draft)
    draft_category_add(dimension=dimension, key="env", name="Environment", parent_key="config")
    assert _keys(draft) == ["api", "config", "default", "propagation", "env", "typo", "logic"]
    draft_category_move(category=_category(draft, "typo"), parent_key="config")
    assert _keys(draft) == ["api", "config", "default", "propagation", "env", "typo", "logic"]
    assert _category(draft, "typo").parent.key == "config"
    draft_category_reorder(category=_category(draft, "typo"), direction="up")
    draft_category_reorder(category=_category(draft, "typo"), direction="up")
    assert _keys(draft) == ["api", "config", "default", "typo", "propagation", "env", "logic"]
    draft_category_reorder(category=_category(draft, "logic"), direction="up")
    assert _keys(draft) == ["api", "logic", "config", "default", "typo", "propagation", "env"]
    draft_category_move(category=_category(draft, "config"), parent_key=None)
    assert _keys(draft)[-5:] == ["config", "default", "typo", "propagation", "env"]


def test_moving_a_category_under_its_own_child_is_a_cycle_and_changes_nothing(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    before = _state(draft)
    with pytest.raises(ApplicationError, match="cycle"):
        draft_category_move(category=_category(draft, "config"), parent_key="default")
    with pytest.raises(ApplicationError, match="cycle"):
        draft_category_move(category=_category(draft, "config"), parent_key="config")
    assert _state(draft) == before


def test_keys_stay_unique_and_well_formed_in_a_dimension(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    dimension = _dimension(draft)
    before = _state(draft)
    with pytest.raises(ApplicationError, match="has a category 'typo' already"):
        draft_category_add(dimension=dimension, key="typo", name="Again")
    with pytest.raises(ApplicationError, match="has a category 'logic' already"):
        draft_category_update(category=_category(draft, "typo"), key="logic")
    with pytest.raises(ApplicationError, match="is not a key"):
        draft_category_add(dimension=dimension, key="Not A Key", name="x")
    with pytest.raises(ApplicationError, match="is not a category"):
        draft_category_add(dimension=dimension, key="x", name="x", parent_key="nowhere")
    assert _state(draft) == before


def test_dimension_settings(small_version):
    draft = codebook_draft_create(version=small_version, label="1.1")
    dimension = draft_dimension_update(
        dimension=_dimension(draft, "fix"), multi_label=False, required=True, ordinal=True
    )
    dimension.refresh_from_db()
    assert (dimension.multi_label, dimension.required, dimension.ordinal) == (False, True, True)
    with pytest.raises(ApplicationError, match="ordinal dimension is single-label"):
        draft_dimension_update(dimension=dimension, multi_label=True)


def test_a_published_version_refuses_every_edit(small_version):
    dimension = _dimension(small_version)
    api = _category(small_version, "api")
    before = _state(small_version)
    refusals = [
        lambda: draft_category_add(dimension=dimension, key="new", name="New"),
        lambda: draft_category_update(category=api, name="Renamed"),
        lambda: draft_category_move(category=api, parent_key="config"),
        lambda: draft_category_reorder(category=api, direction="down"),
        lambda: draft_category_remove(category=api),
        lambda: draft_dimension_update(dimension=dimension, multi_label=True),
        lambda: draft_mapping_declare(
            dimension=dimension, entries=[MappingEntry("typo", "merge", ["logic"])]
        ),
        lambda: codebook_draft_publish(version=small_version),
    ]
    for refuse in refusals:
        with pytest.raises(ApplicationError, match="is published and cannot change"):
            refuse()
    assert _state(small_version) == before


def test_merge_split_and_remove_declare_the_mapping(small_version):
    draft = codebook_draft_create(version=small_version, label="2.0")
    dimension = _dimension(draft)
    draft_category_merge(dimension=dimension, source_keys=["typo"], target_key="logic")
    draft_category_split(
        dimension=dimension,
        source_key="api",
        parts=[("api_external", "External API"), ("api_internal", "Internal API")],
    )
    draft_category_remove(category=_category(draft, "propagation"))
    assert _keys(draft) == ["api_external", "api_internal", "config", "default", "logic"]
    mappings = {
        (m.from_category.key, m.to_category.key if m.to_category else None, m.kind)
        for m in CategoryMapping.objects.filter(to_version=draft).select_related(
            "from_category", "to_category"
        )
    }
    assert mappings == {
        ("typo", "logic", "merge"),
        ("api", "api_external", "split"),
        ("api", "api_internal", "split"),
        ("propagation", None, "remove"),
    }
    assert draft_problems(version=draft) == []


def test_bad_mappings_are_refused_with_nothing_changed(small_version):
    draft = codebook_draft_create(version=small_version, label="2.0")
    dimension = _dimension(draft)
    before = _state(draft)
    cases = {
        "is not a category of Cause in version 2.0": [MappingEntry("typo", "merge", ["nowhere"])],
        "is not a category of Cause in version 1.0": [MappingEntry("nowhere", "merge", ["logic"])],
        "mapped twice": [
            MappingEntry("typo", "merge", ["logic"]),
            MappingEntry("typo", "remove", []),
        ],
        "a cycle typo -> logic -> typo": [
            MappingEntry("typo", "merge", ["logic"]),
            MappingEntry("logic", "merge", ["typo"]),
        ],
        "a merge has exactly one target": [MappingEntry("typo", "merge", ["logic", "api"])],
        "a split has two targets or more": [MappingEntry("typo", "split", ["logic"])],
        "is not merge, split or remove": [MappingEntry("typo", "explode", [])],
    }
    for message, entries in cases.items():
        with pytest.raises(ApplicationError, match=message) as caught:
            draft_mapping_declare(dimension=dimension, entries=entries)
        assert caught.value.extra["mapping"]
        assert _state(draft) == before, message


def test_publishing_needs_every_parent_category_accounted_for(small_version):
    draft = codebook_draft_create(version=small_version, label="2.0")
    dimension = _dimension(draft)
    # A draft row deleted without a decision (as a loaded file could leave it) is unmapped.
    Category.objects.filter(dimension=dimension, key="typo").delete()
    with pytest.raises(ApplicationError, match=r"cause\.typo of version 1\.0 is not in the draft"):
        codebook_draft_publish(version=draft)
    draft.refresh_from_db()
    assert draft.status == CodebookVersion.Status.DRAFT and draft.published_at is None
    draft_mapping_declare(dimension=dimension, entries=[MappingEntry("typo", "remove", [])])
    draft_category_update(category=_category(draft, "logic"), key="logic_error", name="Logic")
    published = codebook_draft_publish(version=draft)
    assert published.is_published and published.content_hash
    assert published.content_hash == codebook_version_to_spec(version=published).content_hash
    rename = CategoryMapping.objects.get(to_version=published, kind="rename")
    assert (rename.from_category.key, rename.to_category.key) == ("logic", "logic_error")
    with pytest.raises(ApplicationError, match="is published and cannot change"):
        draft_category_update(category=_category(published, "api"), name="Changed")
