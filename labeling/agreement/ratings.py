"""Rating rows coded into integer arrays: the one input shape every coefficient reads."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from labeling.agreement.sets import bit_masks

# Single-label value meaning "no category applies".
NONE_APPLIES = ""


@dataclass(frozen=True)
class Ratings:
    """One dimension's ratings on the items that have at least two of them, integer coded,
    plus what the single-rated items chose (for chance terms that use every rated item)."""

    annotators: list[str]  # sorted names
    values: list[str]  # single-label: values in scale order; multi-label: categories
    # items x annotators: value code (single-label) or label-set code (multi-label); -1 = none
    grid: NDArray[np.intp]
    rated: NDArray[np.bool_]  # grid >= 0
    # items x annotators x values: which values each rating used (all False when unrated)
    membership: NDArray[np.bool_]
    # multi-label only: distinct label sets (sets x values) indexed by the codes in grid
    label_set_members: NDArray[np.bool_] | None
    # single-rated items x values: which values their one rating used
    single_membership: NDArray[np.bool_]

    @property
    def n_items(self) -> int:
        return self.grid.shape[0]

    @property
    def ratings_per_item(self) -> NDArray[np.intp]:
        return self.rated.sum(axis=1)


def code_ratings(
    item_ids: Sequence[int],
    annotators: Sequence[str],
    label_sets: Sequence[Collection[str]],
    categories: Sequence[str],
    multi_label: bool,
) -> Ratings:
    n_rows = len(item_ids)
    if len(annotators) != n_rows or len(label_sets) != n_rows:
        raise ValueError("item_ids, annotators and label_sets must have the same length")
    if len(set(categories)) != len(categories):
        raise ValueError("categories must not contain duplicates")

    # Rows are coded with C-level map()/dict lookups: a per-row Python loop would dominate.
    annotator_names = sorted(set(annotators))
    annotator_position = {name: code for code, name in enumerate(annotator_names)}
    annotator_codes = np.fromiter(map(annotator_position.__getitem__, annotators), np.intp, n_rows)
    key_sets = _as_key_sets(label_sets)
    set_sizes = np.fromiter(map(len, key_sets), np.intp, n_rows)
    keys = list(itertools.chain.from_iterable(key_sets))
    if multi_label:
        values, row_membership = _code_multi_label(keys, set_sizes, categories)
    else:
        values, value_codes = _code_single_label(keys, set_sizes, key_sets, categories)
        row_membership = value_codes[:, np.newaxis] == np.arange(len(values))

    # Latest row of every (item, annotator) cell.
    item_codes = np.unique(np.asarray(item_ids), return_inverse=True)[1].reshape(-1)
    n_item_ids = int(item_codes.max()) + 1 if n_rows else 0
    latest_row = np.full((n_item_ids, len(annotator_names)), -1, dtype=np.intp)
    np.maximum.at(latest_row, (item_codes, annotator_codes), np.arange(n_rows))
    ratings_per_item = (latest_row >= 0).sum(axis=1)
    single_rows = latest_row[ratings_per_item == 1].max(axis=1, initial=-1)
    single_membership = row_membership[single_rows]
    latest_row = latest_row[ratings_per_item >= 2]
    rated = latest_row >= 0

    label_set_members = None
    if multi_label:
        membership = row_membership[latest_row] & rated[:, :, np.newaxis]
        label_set_members, set_codes = _distinct_rows(membership[rated])
        grid = np.full(rated.shape, -1, dtype=np.intp)
        grid[rated] = set_codes
    else:
        grid = np.where(rated, value_codes[latest_row], -1)
        membership = grid[:, :, np.newaxis] == np.arange(len(values))

    return Ratings(
        annotators=[str(name) for name in annotator_names],
        values=values,
        grid=grid,
        rated=rated,
        membership=membership,
        label_set_members=label_set_members,
        single_membership=single_membership,
    )


def _as_key_sets(label_sets: Sequence[Collection[str]]) -> Sequence[Collection[str]]:
    # A bare string is one key, not a collection of one-character keys.
    if any(issubclass(kind, str) for kind in set(map(type, label_sets))):
        return [(labels,) if isinstance(labels, str) else labels for labels in label_sets]
    return label_sets


def _code_single_label(
    keys: list[str],
    set_sizes: NDArray[np.intp],
    key_sets: Sequence[Collection[str]],
    categories: Sequence[str],
) -> tuple[list[str], NDArray[np.intp]]:
    if (set_sizes > 1).any():
        labels = key_sets[int(np.argmax(set_sizes > 1))]
        raise ValueError(f"a single-label rating has several labels: {sorted(labels)}")
    labelled = set_sizes == 1
    seen = set(keys) if labelled.all() else {*keys, NONE_APPLIES}
    values = _value_order(categories, seen)
    position = {key: code for code, key in enumerate(values)}
    codes = np.full(len(set_sizes), position.get(NONE_APPLIES, -1), dtype=np.intp)
    codes[labelled] = np.fromiter(map(position.__getitem__, keys), np.intp, len(keys))
    return values, codes


def _code_multi_label(
    keys: list[str], set_sizes: NDArray[np.intp], categories: Sequence[str]
) -> tuple[list[str], NDArray[np.bool_]]:
    values = _value_order(categories, set(keys) - {NONE_APPLIES})
    position = {key: code for code, key in enumerate(values)}
    position[NONE_APPLIES] = -1  # not a category: the empty set already says "none applies"
    key_codes = np.fromiter(map(position.__getitem__, keys), np.intp, len(keys))
    key_rows = np.repeat(np.arange(len(set_sizes)), set_sizes)
    is_category = key_codes >= 0
    row_membership = np.zeros((len(set_sizes), len(values)), dtype=bool)
    row_membership[key_rows[is_category], key_codes[is_category]] = True
    return values, row_membership


def _distinct_rows(
    members: NDArray[np.bool_],
) -> tuple[NDArray[np.bool_], NDArray[np.intp]]:
    """Distinct membership rows and, per row, the index of its distinct row."""
    words = bit_masks(members)
    if words.shape[1] == 1:
        # Up to 64 categories: one integer per label set, so a fast 1-D unique.
        _, first, inverse = np.unique(words[:, 0], return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
    return members[first], inverse.reshape(-1)


def _value_order(categories: Sequence[str], seen: set[str]) -> list[str]:
    """Listed categories first (their order is the ordinal scale), then unlisted keys."""
    unlisted = seen.difference(categories)
    ordered = [*categories, *sorted(unlisted - {NONE_APPLIES})]
    if NONE_APPLIES in unlisted:
        ordered.append(NONE_APPLIES)
    return ordered
