"""The pilot gate, written: a round's targets, opening a main round anyway, and recording that a
main round opened because its pilots passed (labeling.pilot_gate reads the gate)."""

from collections.abc import Mapping

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from common.exceptions import ApplicationError, PermissionDeniedError
from common.text import strip_nul
from labeling.access import MANAGER, study_roles
from labeling.models import Round, Study, StudyEvent
from labeling.pilot_gate import study_gate_states, study_round_ids_held_back
from labeling.selectors import study_dimensions
from labeling.services.lifecycle import MAX_REASON, study_event_record

PASSED_REASON = "the pilot passed"


def _check_manager(study: Study, user: AbstractBaseUser, what: str) -> None:
    if MANAGER not in study_roles(study=study, user=user):
        raise PermissionDeniedError(f"Only the study's managers {what}.")


def _kappa(value: float | None, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not -1.0 <= value <= 1.0:
        raise ApplicationError(f"{what}: a target κ lies between -1 and 1.", {"field": what})
    return float(value)


@transaction.atomic
def round_targets_set(
    *,
    round: Round,
    user: AbstractBaseUser,
    target_kappa: float | None,
    dimension_targets: Mapping[str, float | None] | None = None,
) -> Round:
    """Set a round's target κ for every required dimension (`target_kappa`, None: none) and, per
    dimension key, targets of their own (None for a key: the round's). A key that is not a
    required dimension of the study is refused. Managers only; logged."""
    round = Round.objects.select_for_update().select_related("study").get(pk=round.pk)
    study = round.study
    _check_manager(study, user, "set a round's targets")
    target_kappa = _kappa(target_kappa, "target_kappa")
    required = {d.key for d in study_dimensions(study=study) if d.required}
    own = {}
    for key, value in (dimension_targets or {}).items():
        if key not in required:
            raise ApplicationError(
                f"{key} is not a required dimension of this study.",
                {"field": "dimension_targets", "dimension": key},
            )
        value = _kappa(value, key)
        if value is not None:
            own[key] = value
    round.target_kappa, round.dimension_targets = target_kappa, own
    round.save(update_fields=["target_kappa", "dimension_targets"])
    study_event_record(
        study=study,
        actor=user,
        action=StudyEvent.Action.ROUND_SAVED,
        details={"round": round.name, "target_kappa": target_kappa, "dimension_targets": own},
    )
    return round


@transaction.atomic
def round_gate_open(*, round: Round, user: AbstractBaseUser, reason: str) -> Round:
    """Open a main round that waits for its pilots, before they pass, saying why (kept on the
    round and in the activity log). Managers only."""
    round = Round.objects.select_for_update().select_related("study").get(pk=round.pk)
    study = round.study
    _check_manager(study, user, "open a round before its pilot passed")
    reason = strip_nul(reason or "").strip()
    if not reason:
        raise ApplicationError(
            "Say why the round opens before its pilot passed.", {"field": "reason"}
        )
    if len(reason) > MAX_REASON:
        raise ApplicationError(
            f"A reason has at most {MAX_REASON} characters ({len(reason)}).", {"field": "reason"}
        )
    if round.pk not in study_round_ids_held_back(study=study):
        raise ApplicationError(
            f"{round.name} does not wait for a pilot: it is open already, or no pilot before it "
            "carries a target.",
            {"round": round.name},
        )
    state = next(state for state in study_gate_states(study=study) if state.round.pk == round.pk)
    round.gate_opened_at = timezone.now()
    round.gate_opened_by = user
    round.gate_opened_reason = reason
    round.save(update_fields=["gate_opened_at", "gate_opened_by", "gate_opened_reason"])
    study_event_record(
        study=study,
        actor=user,
        action=StudyEvent.Action.GATE_OPENED,
        reason=reason,
        details={"round": round.name, "held_back_by": state.wording},
    )
    return round


def study_rounds_held_back(*, study: Study) -> set[int]:
    """The ids of the study's rounds whose items are not handed out yet. A gated main round whose
    pilots have passed is recorded as open (and logged), so that their agreement is not
    computed again at every hand-out. Runs inside the caller's transaction."""
    rounds = list(study.rounds.order_by("position"))
    waiting = [
        r for r in rounds if r.kind == Round.Kind.MAIN and r.gate_opened_at is None
    ]  # only these can be held back
    if not waiting:
        return set()
    held = set()
    for state in study_gate_states(study=study, rounds=rounds):
        if state.round.gate_opened_at is not None:
            continue
        if state.held_back_by:
            held.add(state.round.pk)
            continue
        opened = Round.objects.filter(pk=state.round.pk, gate_opened_at__isnull=True).update(
            gate_opened_at=timezone.now(), gate_opened_reason=PASSED_REASON
        )
        if opened:
            study_event_record(
                study=study,
                actor=None,
                action=StudyEvent.Action.GATE_PASSED,
                reason=PASSED_REASON,
                details={
                    "round": state.round.name,
                    "pilots": [status.round.name for status in state.pilots],
                },
            )
    return held
