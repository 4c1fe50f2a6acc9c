"""Which issues a study takes: seeded, reproducible sampling. Pure functions, no Django.

Papers report "we sampled 300 issues, 100 per system, seed 7"; a reader must be able to draw the
same 300 from the same corpus on another machine. So nothing here depends on database ids, on
the order issues were stored in, or on Python's `random` (whose algorithms may change): every
issue gets a rank, the SHA-256 of the seed and its reference ("owner/name#number"), and a sample
is the issues of lowest rank. The same seed gives the same ranks anywhere; an issue added to the
corpus later never changes the rank of the others.

Methods:
* all: every candidate;
* random: the `size` candidates of lowest rank;
* stratified: per repository (a "system"), either `per_stratum` each (all of a smaller one), or
  `size` split in proportion to the strata's sizes (largest remainders, ties to the stratum
  named first in alphabetical order).

Rounds take the sample in rank order: a 30-item pilot round gets the 30 lowest-ranked items of
the sample. Overlap (some items coded by k annotators, the rest by one) picks the double-coded
items by a second rank with its own salt, so that they do not coincide with the pilot round.
"""

import hashlib
import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

ALGORITHM = "sha256-rank-v1"
METHODS = ("all", "random", "stratified")


@dataclass(frozen=True)
class Candidate:
    reference: str  # "owner/name#number"
    stratum: str  # "owner/name"


def rank(seed: int, reference: str, salt: str = "sample") -> str:
    """A reproducible pseudo-random rank of an issue for a seed (hex, compared as text)."""
    return hashlib.sha256(f"{ALGORITHM}:{salt}:{seed}:{reference}".encode()).hexdigest()


def ranked(candidates: Iterable[Candidate], seed: int, salt: str = "sample") -> list[Candidate]:
    """The candidates in rank order (one per reference)."""
    unique = {candidate.reference: candidate for candidate in candidates}
    return sorted(unique.values(), key=lambda c: (rank(seed, c.reference, salt), c.reference))


def sample(
    candidates: Iterable[Candidate],
    *,
    seed: int,
    method: str = "all",
    size: int | None = None,
    per_stratum: int | None = None,
) -> list[Candidate]:
    """The sampled candidates, in rank order. Raises ValueError for an incomplete rule."""
    if method not in METHODS:
        raise ValueError(f"the sampling method is one of {', '.join(METHODS)}")
    order = ranked(candidates, seed)
    if method == "all":
        return order
    if method == "random":
        if size is None or size < 1:
            raise ValueError("random sampling needs a size of at least 1")
        return order[:size]
    by_stratum: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in order:
        by_stratum[candidate.stratum].append(candidate)
    if per_stratum is not None:
        if per_stratum < 1:
            raise ValueError("a number per repository is at least 1")
        quotas = {stratum: per_stratum for stratum in by_stratum}
    elif size is not None and size >= 1:
        quotas = proportional_quotas({s: len(c) for s, c in by_stratum.items()}, size)
    else:
        raise ValueError("stratified sampling needs a number per repository or a total size")
    chosen = {
        candidate.reference
        for stratum, members in by_stratum.items()
        for candidate in members[: quotas[stratum]]
    }
    return [candidate for candidate in order if candidate.reference in chosen]


def proportional_quotas(sizes: dict[str, int], total: int) -> dict[str, int]:
    """`total` split over strata in proportion to their sizes (largest remainder method), never
    more than a stratum holds."""
    available = sum(sizes.values())
    total = min(total, available)
    if not available:
        return dict.fromkeys(sizes, 0)
    exact = {stratum: total * count / available for stratum, count in sizes.items()}
    quotas = {stratum: math.floor(share) for stratum, share in exact.items()}
    by_remainder = sorted(exact, key=lambda s: (-(exact[s] - quotas[s]), s))
    for stratum in by_remainder[: total - sum(quotas.values())]:
        quotas[stratum] += 1
    return quotas


def rounds_split(
    sampled: Sequence[Candidate], round_sizes: Sequence[int | None]
) -> list[list[Candidate]]:
    """The sample cut into rounds in rank order; a size of None takes the rest (last round)."""
    parts, start = [], 0
    for index, size in enumerate(round_sizes):
        if size is None:
            if index != len(round_sizes) - 1:
                raise ValueError("only the last round takes the rest of the sample")
            parts.append(list(sampled[start:]))
            start = len(sampled)
            continue
        if size < 0:
            raise ValueError("a round's size is not negative")
        parts.append(list(sampled[start : start + size]))
        start += size
    return parts


def overlap_references(sampled: Sequence[Candidate], *, seed: int, fraction: float) -> set[str]:
    """The references of the items coded by several annotators when only `fraction` of them are
    (rounded up, so that 20 % of 7 items is 2): those of lowest overlap rank."""
    if not 0.0 <= fraction <= 1.0:
        raise ValueError("the overlap is a fraction between 0 and 1")
    count = math.ceil(fraction * len(sampled) - 1e-9)
    return {c.reference for c in ranked(sampled, seed, salt="overlap")[:count]}
