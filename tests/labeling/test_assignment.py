from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from labeling.assignment import balanced_assignment


@given(
    n_items=st.integers(min_value=0, max_value=300),
    n_annotators=st.integers(min_value=1, max_value=12),
    k=st.integers(min_value=1, max_value=12),
)
def test_each_item_gets_k_distinct_annotators_and_load_is_even(n_items, n_annotators, k):
    annotators = [f"a{i}" for i in range(n_annotators)]
    if k > n_annotators:
        with pytest.raises(ValueError):
            balanced_assignment(n_items, annotators, k)
        return
    plan = balanced_assignment(n_items, annotators, k)
    assert len(plan) == n_items
    assert all(len(set(item)) == k for item in plan)
    load = Counter(name for item in plan for name in item)
    if n_items:
        counts = [load.get(name, 0) for name in annotators]
        assert max(counts) - min(counts) <= 1
