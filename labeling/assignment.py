"""Who labels what: pure functions, no Django."""

from collections.abc import Sequence
from dataclasses import dataclass


def least_loaded_assignment(
    needs: Sequence[int], annotators: Sequence[str], loads: dict[str, int] | None = None
) -> list[list[str]]:
    """Give item i to `needs[i]` distinct annotators, each time the least loaded ones (ties in
    the order given), starting from the open `loads` they carry already. Items coded by one
    annotator and items coded by k mix freely, and every annotator ends within one item of the
    others when they started even."""
    load = {name: (loads or {}).get(name, 0) for name in annotators}
    order = {name: index for index, name in enumerate(annotators)}
    plan = []
    for need in needs:
        if need > len(annotators):
            raise ValueError(f"an item needs {need} annotators, only {len(annotators)} given")
        chosen = sorted(annotators, key=lambda name: (load[name], order[name]))[:need]
        for name in chosen:
            load[name] += 1
        plan.append(chosen)
    return plan


@dataclass(frozen=True)
class RoundGate:
    """What the pilot gate needs to know of a round, in the study's order of rounds."""

    round_id: int
    is_pilot: bool
    has_target: bool
    passed: bool  # a pilot's verdict on its targets is "passed"
    opened: bool  # a main round a manager opened, or that opened when its pilots passed


def rounds_held_back(rounds: Sequence[RoundGate]) -> dict[int, list[int]]:
    """The main rounds whose items are not handed out yet, each with the pilot rounds before it
    that hold it back: pilots carrying a target that have not passed it. A main round opened
    (by a manager, or once its pilots passed) is never held back; a pilot never is."""
    held: dict[int, list[int]] = {}
    blocking: list[int] = []
    for round_ in rounds:
        if round_.is_pilot:
            if round_.has_target and not round_.passed:
                blocking.append(round_.round_id)
        elif blocking and not round_.opened:
            held[round_.round_id] = list(blocking)
    return held
