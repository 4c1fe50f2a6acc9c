"""The pilot gate, read: which main rounds of a study hand out no item yet, and why.

A main round that follows pilot rounds carrying a target κ waits until each of them passes on
the headline κ of every required dimension (labeling.agreement_report.RoundStatus), or until a
manager opens it anyway (labeling.services.pilot_gate). Once open it stays open: a main round
records when it opened, so that the agreement of the pilots is computed only while a round
waits.
"""

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from labeling.assignment import RoundGate, rounds_held_back
from labeling.models import Round, Study

if TYPE_CHECKING:
    from labeling.agreement_report import RoundStatus


@dataclass
class GateState:
    """A main round behind pilot rounds with targets: open or not, and what holds it back."""

    round: Round
    pilots: "list[RoundStatus]"  # the pilot rounds with a target before it
    held_back_by: "list[RoundStatus]" = field(default_factory=list)  # those not passed

    @property
    def is_open(self) -> bool:
        return self.round.gate_opened_at is not None or not self.held_back_by

    @property
    def opened_anyway(self) -> bool:
        return self.round.gate_opened_at is not None and self.round.gate_opened_by_id is not None

    @property
    def wording(self) -> str:
        if self.round.gate_opened_at is not None:
            if self.opened_anyway:
                return "opened by a manager before the pilot passed"
            return "open: the pilot passed"
        if not self.held_back_by:
            return "open: the pilot passed"
        return "waiting for the pilot: " + "; ".join(
            f"{status.round.name}: {status.wording}" for status in self.held_back_by
        )


def _has_target(round_: Round) -> bool:
    return round_.target_kappa is not None or bool(round_.dimension_targets)


def _gated(rounds: list[Round]) -> list[Round]:
    """The main rounds that come after a pilot round with a target."""
    gated, seen_target = [], False
    for round_ in rounds:
        if round_.kind == Round.Kind.PILOT:
            seen_target = seen_target or _has_target(round_)
        elif seen_target:
            gated.append(round_)
    return gated


def study_gate_states(
    *,
    study: Study,
    rounds: list[Round] | None = None,
    statuses: "list[RoundStatus] | None" = None,
) -> list[GateState]:
    """The state of every gated main round of the study, in round order (none when no pilot
    carries a target, and then no agreement is computed). `rounds` and `statuses`
    (study_round_statuses) when the caller has them already."""
    rounds = rounds if rounds is not None else list(study.rounds.order_by("position"))
    gated = _gated(rounds)
    if not gated:
        return []
    if statuses is None:
        # Imported here: the agreement brings numpy, which a process that hands out items of a
        # study without a waiting round (most) never needs; it was a tenth of every start.
        from labeling.agreement_report import study_round_statuses

        statuses = study_round_statuses(study=study)
    by_round = {status.round.pk: status for status in statuses}
    gates = [
        RoundGate(
            round_id=round_.pk,
            is_pilot=round_.kind == Round.Kind.PILOT,
            has_target=_has_target(round_),
            passed=by_round[round_.pk].verdict == "passed" if round_.pk in by_round else False,
            opened=round_.gate_opened_at is not None,
        )
        for round_ in rounds
    ]
    held = rounds_held_back(gates)
    states = []
    for round_ in gated:
        earlier = [r for r in rounds if r.position < round_.position]
        pilots = [by_round[r.pk] for r in earlier if r.kind == Round.Kind.PILOT and _has_target(r)]
        blocking = set(held.get(round_.pk, []))
        states.append(
            GateState(
                round=round_,
                pilots=pilots,
                held_back_by=[status for status in pilots if status.round.pk in blocking],
            )
        )
    return states


def study_round_ids_held_back(*, study: Study) -> set[int]:
    """The ids of the study's main rounds that hand out no item yet. One query when no round
    waits (no pilot with a target, or every gated round open); the pilots' agreement otherwise."""
    rounds = list(study.rounds.order_by("position"))
    if all(round_.gate_opened_at is not None for round_ in _gated(rounds)):
        return set()
    return {
        state.round.pk
        for state in study_gate_states(study=study, rounds=rounds)
        if not state.is_open
    }
