"""Who labels what: pure functions, no Django."""

from collections.abc import Sequence


def balanced_assignment(n_items: int, annotators: Sequence[str], k: int) -> list[list[str]]:
    """Give each of `n_items` items to `k` distinct annotators, spreading the load evenly.

    Item i goes to annotators i*k .. i*k+k-1 (mod n), so every annotator gets within one item of
    n_items*k/n, and with k == n everybody labels everything.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    if len(annotators) < k:
        raise ValueError(f"k = {k} needs at least {k} annotators, got {len(annotators)}")
    count = len(annotators)
    return [[annotators[(i * k + j) % count] for j in range(k)] for i in range(n_items)]
