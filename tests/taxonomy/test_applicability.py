"""The `applies_when` rule exists once (Dimension.applies_given); the page's table is derived
from it and answers the same for every combination of answers."""

from itertools import chain, combinations

from taxonomy.models import Dimension


def _subsets(keys):
    return chain.from_iterable(combinations(keys, size) for size in range(len(keys) + 1))


def _table_says(table, chosen) -> bool:
    """How the page reads the table (web/static/web/labeling.js, updateApplicability)."""
    return all(
        table[key][""] if not chosen.get(key) else any(table[key].get(k) for k in chosen[key])
        for key in table
    )


def test_the_table_agrees_with_the_rule_for_every_answer():
    dimension = Dimension(
        key="root_cause", applies_when={"screening": ["include"], "kind": ["a", "b"]}
    )
    table = dimension.applicability_table()
    assert table == {
        "screening": {"": False, "include": True},
        "kind": {"": False, "a": True, "b": True},
    }
    for screening in _subsets(["include", "exclude"]):
        for kind in _subsets(["a", "b", "c"]):
            chosen = {"screening": set(screening), "kind": set(kind)}
            assert _table_says(table, chosen) == dimension.applies_given(chosen), chosen


def test_a_dimension_without_condition_always_applies():
    dimension = Dimension(key="symptom", applies_when={})
    assert dimension.applicability_table() == {}
    assert dimension.applies_given({"screening": set()})
