from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labeling.assignment import least_loaded_assignment


@given(
    needs=st.lists(st.integers(min_value=1, max_value=5), max_size=200),
    n_annotators=st.integers(min_value=1, max_value=12),
)
def test_each_item_gets_distinct_annotators_and_the_load_stays_even(needs, n_annotators):
    annotators = [f"a{i}" for i in range(n_annotators)]
    if any(need > n_annotators for need in needs):
        with pytest.raises(ValueError):
            least_loaded_assignment(needs, annotators)
        return
    plan = least_loaded_assignment(needs, annotators)
    assert [len(set(chosen)) for chosen in plan] == list(needs)
    load = Counter(name for chosen in plan for name in chosen)
    counts = [load.get(name, 0) for name in annotators]
    assert max(counts) - min(counts) <= 1


def test_a_newcomer_is_given_items_until_the_load_is_even():
    plan = least_loaded_assignment([1] * 4, ["old", "new"], loads={"old": 3})
    assert Counter(name for chosen in plan for name in chosen) == Counter({"new": 3, "old": 1})
