"""How the submitted labels of one item become gold labels, dimension by dimension.

Plain data in, states out, so that the service that writes resolutions and the selectors that
list disagreements apply one rule:

* a dimension already resolved keeps its resolution;
* a dimension whose condition (`applies_when`, e.g. screening) is not settled yet waits;
* a dimension that does not apply to the settled answers needs no gold label;
* a dimension given to annotators who have not seen the item (an adjudicator's decision made it
  apply although the item's annotators did not answer it) waits for their labels;
* a dimension every annotator answered alike is a consensus;
* under the majority rule (or once a tie-breaker has labeled the item), a label set held by more
  than half of the annotators is the majority's;
* anything else is a disagreement, for an adjudicator.

An annotator for whom a dimension did not apply (they screened the item out) has no answer on
it, which is never a consensus with those who answered; once the dimension went to annotators
who have not seen the item (`Relabel`), the answers are those of whoever answered it, and fewer
than the item needs are no consensus either.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from taxonomy.models import Dimension


class DimensionState(StrEnum):
    RESOLVED = "resolved"
    WAITING = "waiting"  # its condition's dimension is not settled yet
    NOT_APPLICABLE = "not_applicable"
    CONSENSUS = "consensus"
    MAJORITY = "majority"
    OPEN = "open"  # a disagreement
    RELABELING = "relabeling"  # annotators who have not seen the item are labeling it


@dataclass(frozen=True)
class Relabel:
    """The assignments of an item that label only some of its dimensions: those an adjudicator's
    decision made apply although the item's annotators did not answer them."""

    # annotator -> the dimension keys they labeled (submitted assignments)
    scopes: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # dimension keys that an assignment not submitted yet is to label
    pending: frozenset[str] = frozenset()

    @property
    def dimensions(self) -> frozenset[str]:
        return self.pending.union(*self.scopes.values())


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
    relabel: Relabel | None = None,
    needed: int = 1,
) -> list[DimensionOutcome]:
    """The state of every dimension of an item, in codebook order.

    `labels` maps each annotator who submitted to their category keys per dimension key (a
    dimension they left empty maps to an empty set or is missing); `gold` maps the dimensions
    already resolved to their gold keys; `relabel` says which dimensions went to annotators
    who have not seen the item; `needed` is how many answers the item needs (its k). Consensus
    and majority outcomes count as settled for the dimensions after them, exactly as they will
    once recorded.
    """
    relabel = relabel or Relabel()
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
        if dimension.key in relabel.pending:
            outcomes.append(DimensionOutcome(dimension, DimensionState.RELABELING))
            continue
        answers = list(annotator_answers(dimension, labels, dimensions, relabel).values())
        if dimension.key in relabel.dimensions and len(answers) < needed:
            # One of them skipped: a single label is no consensus of the k the item needs.
            outcome = DimensionOutcome(dimension, DimensionState.OPEN)
        else:
            outcome = _outcome(dimension, answers, majority_decides=majority_decides)
        if outcome.categories is not None:
            settled[dimension.key] = outcome.categories
        outcomes.append(outcome)
    return outcomes


def annotator_answers(
    dimension: Dimension,
    labels: Mapping[str, Mapping[str, frozenset[str]]],
    dimensions: Sequence[Dimension],
    relabel: Relabel | None = None,
) -> dict[str, frozenset[str] | None]:
    """Each annotator's answer on a dimension: their category keys, or None when the dimension
    did not apply to their own answers (they screened the item out).

    With `relabel`: an annotator who was not asked the dimension has no answer on it, and
    whether it applies to one who labels only some dimensions depends on their answers to
    those only (the others were settled for them). On a dimension that went to annotators who
    have not seen the item, those to whom it did not apply are left out: the new annotators
    answer in their place."""
    relabel = relabel or Relabel()
    answers: dict[str, frozenset[str] | None] = {}
    for annotator, own in labels.items():
        scope = relabel.scopes.get(annotator)
        if scope is not None and dimension.key not in scope:
            continue
        asked = dimensions if scope is None else [d for d in dimensions if d.key in scope]
        if dimension.applies_given(_with_empty(own, asked)):
            answers[annotator] = frozenset(own.get(dimension.key, frozenset()))
        elif dimension.key not in relabel.dimensions:
            answers[annotator] = None
    return answers


def _with_empty(
    own: Mapping[str, frozenset[str]], dimensions: Sequence[Dimension]
) -> dict[str, frozenset[str]]:
    # An annotator who left a dimension empty answered "none": it excludes what depends on it.
    # A dimension they were not asked is not in the result, so it excludes nothing.
    return {d.key: frozenset(own.get(d.key, frozenset())) for d in dimensions}


def relabel_plan(
    *,
    dimensions: Sequence[Dimension],
    outcomes: Sequence[DimensionOutcome],
    labels: Mapping[str, Mapping[str, frozenset[str]]],
    relabel: Relabel | None,
    needed: int,
) -> tuple[list[str], int]:
    """What annotators who have not seen an item must label once a decision made dimensions
    apply that fewer than `needed` of its annotators answered (they screened it out, an
    adjudicator screened it in): those dimensions and the ones that wait on them, in codebook
    order, and how many more annotators they need (0: none)."""
    relabel = relabel or Relabel()
    short = {}
    for outcome in outcomes:
        if outcome.state not in (
            DimensionState.OPEN,
            DimensionState.CONSENSUS,
            DimensionState.MAJORITY,
        ):
            continue
        answers = annotator_answers(outcome.dimension, labels, dimensions, relabel)
        answered = sum(answer is not None for answer in answers.values())
        if answered < needed:
            short[outcome.dimension.key] = needed - answered
    if not short:
        return [], 0
    waiting = {o.dimension.key for o in outcomes if o.state == DimensionState.WAITING}
    scope = set(short)
    for dimension in dimensions:  # conditions name earlier dimensions: one pass suffices
        if dimension.key in waiting and scope & set(dimension.applies_when):
            scope.add(dimension.key)
    return [d.key for d in dimensions if d.key in scope], max(short.values())


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
