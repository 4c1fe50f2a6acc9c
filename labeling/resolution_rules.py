"""How the submitted labels of one item become gold labels, dimension by dimension.

Plain data in, states out, so that the service that writes resolutions and the selectors that
list disagreements apply one rule:

* a dimension already resolved keeps its resolution;
* a dimension whose condition (`applies_when`, e.g. screening) is not settled yet waits;
* a dimension that does not apply to the settled answers needs no gold label;
* a dimension every annotator answered alike is a consensus;
* under the majority rule (or once a tie-breaker has labeled the item), a label set held by more
  than half of the annotators is the majority's;
* anything else is a disagreement, for an adjudicator.

An annotator for whom a dimension did not apply (they screened the item out) has no answer on
it, which is never a consensus with those who answered.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from taxonomy.models import Dimension


class DimensionState(StrEnum):
    RESOLVED = "resolved"
    WAITING = "waiting"  # its condition's dimension is not settled yet
    NOT_APPLICABLE = "not_applicable"
    CONSENSUS = "consensus"
    MAJORITY = "majority"
    OPEN = "open"  # a disagreement


@dataclass(frozen=True)
class DimensionOutcome:
    dimension: Dimension
    state: DimensionState
    # The gold label set a consensus or majority gives; the resolution's for RESOLVED.
    categories: frozenset[str] | None = None


def item_outcomes(
    *,
    dimensions: Sequence[Dimension],
    labels: Mapping[str, Mapping[str, frozenset[str]]],
    gold: Mapping[str, frozenset[str]],
    majority_decides: bool,
) -> list[DimensionOutcome]:
    """The state of every dimension of an item, in codebook order.

    `labels` maps each annotator who submitted to their category keys per dimension key (a
    dimension they left empty maps to an empty set or is missing); `gold` maps the dimensions
    already resolved to their gold keys. Consensus and majority outcomes count as settled for
    the dimensions after them, exactly as they will once recorded.
    """
    settled: dict[str, frozenset[str]] = dict(gold)
    outcomes = []
    for dimension in dimensions:
        if dimension.key in gold:
            outcomes.append(
                DimensionOutcome(dimension, DimensionState.RESOLVED, gold[dimension.key])
            )
            continue
        if any(condition not in settled for condition in dimension.applies_when):
            outcomes.append(DimensionOutcome(dimension, DimensionState.WAITING))
            continue
        if not dimension.applies_given(settled):
            outcomes.append(DimensionOutcome(dimension, DimensionState.NOT_APPLICABLE))
            continue
        answers = list(annotator_answers(dimension, labels, dimensions).values())
        outcome = _outcome(dimension, answers, majority_decides=majority_decides)
        if outcome.categories is not None:
            settled[dimension.key] = outcome.categories
        outcomes.append(outcome)
    return outcomes


def annotator_answers(
    dimension: Dimension,
    labels: Mapping[str, Mapping[str, frozenset[str]]],
    dimensions: Sequence[Dimension],
) -> dict[str, frozenset[str] | None]:
    """Each annotator's answer on a dimension: their category keys, or None when the dimension
    did not apply to their own answers (they screened the item out)."""
    return {
        annotator: frozenset(own.get(dimension.key, frozenset()))
        if dimension.applies_given(_with_empty(own, dimensions))
        else None
        for annotator, own in labels.items()
    }


def _with_empty(
    own: Mapping[str, frozenset[str]], dimensions: Sequence[Dimension]
) -> dict[str, frozenset[str]]:
    # An annotator who left a dimension empty answered "none": it excludes what depends on it.
    return {d.key: frozenset(own.get(d.key, frozenset())) for d in dimensions}


def _outcome(
    dimension: Dimension, answers: list[frozenset[str] | None], *, majority_decides: bool
) -> DimensionOutcome:
    if answers and None not in answers and len(set(answers)) == 1:
        return DimensionOutcome(dimension, DimensionState.CONSENSUS, answers[0])
    if majority_decides and answers:
        top, count = Counter(answers).most_common(1)[0]
        if top is not None and 2 * count > len(answers):
            return DimensionOutcome(dimension, DimensionState.MAJORITY, top)
    return DimensionOutcome(dimension, DimensionState.OPEN)


def conflict_label(answers: Sequence[frozenset[str] | None]) -> str:
    """The categories in conflict, written the same whoever said what: "a vs b", "a+b vs c",
    "none vs a" ("none": nothing chosen; "n/a": the dimension did not apply to them)."""
    written = {
        "n/a" if answer is None else ("+".join(sorted(answer)) or "none") for answer in answers
    }
    return " vs ".join(sorted(written))
