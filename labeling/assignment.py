"""Who labels what: pure functions, no Django."""

from collections.abc import Sequence


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
