"""The pilot gate: a main round after a pilot with a target hands out nothing until the pilot
passes on the headline κ of each required dimension, or a manager opens it with a reason."""

import pytest
from rest_framework.test import APIClient

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.assignment import RoundGate, rounds_held_back
from labeling.models import Assignment, Round, StudyEvent
from labeling.pilot_gate import study_gate_states, study_round_ids_held_back
from labeling.selectors import (
    assignment_held_next,
    assignment_held_next_ungated,
    queue_for_annotator,
)
from labeling.services.pilot_gate import round_gate_open, round_targets_set
from labeling.services.studies import (
    item_next_for_annotator,
    round_save,
    study_create,
    study_items_add,
)
from tests.labeling.test_resolution import submit

PILOT_SIZE = 32  # the agreement needs 30 items at least (MIN_ITEMS_FOR_KAPPA)


def gate(round_id, *, pilot=False, target=False, passed=False, opened=False) -> RoundGate:
    return RoundGate(round_id, pilot, target, passed, opened)


def test_which_rounds_wait():
    assert rounds_held_back([gate(1, pilot=True), gate(2)]) == {}  # no target, no gate
    assert rounds_held_back([gate(1, pilot=True, target=True), gate(2), gate(3)]) == {
        2: [1],
        3: [1],
    }
    assert rounds_held_back([gate(1, pilot=True, target=True, passed=True), gate(2)]) == {}
    assert rounds_held_back([gate(1, pilot=True, target=True), gate(2, opened=True)]) == {}
    # A main round before the pilot does not wait for it.
    assert rounds_held_back([gate(1), gate(2, pilot=True, target=True), gate(3)]) == {3: [2]}


@pytest.fixture
def piloted(codebook_version, sample_issues, people):
    """A pilot of 32 items and a main round of the rest; only screening is required."""
    issues = sorted(sample_issues, key=lambda issue: issue.pk)
    study = study_create(
        slug="piloted",
        name="Piloted",
        codebook_version=codebook_version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
        required_dimensions=["screening"],
        issues=issues[:PILOT_SIZE],
        round_name="Pilot",
        round_kind=Round.Kind.PILOT,
    )
    main = round_save(study=study, name="Main")
    study_items_add(study=study, issue_ids=[issue.id for issue in issues[PILOT_SIZE:]], round=main)
    return study


def pilot(study):
    return study.rounds.get(name="Pilot")


def main(study):
    return study.rounds.get(name="Main")


def test_the_next_items_statement_knows_when_a_round_may_wait(piloted, people):
    """The statement that finds an annotator's next item checks the gate's rule in SQL: it
    says a round may wait exactly when a main round not yet open follows a pilot with a
    target, and otherwise finds what assignment_held_next finds."""
    annotator = people["annotator1"]
    item_next_for_annotator(study=piloted, user=annotator)  # holds a pilot item

    def rounds_set(name: str, **fields) -> None:
        Round.objects.filter(study=piloted, name=name).update(**fields)

    def may_wait() -> bool:
        held_next = assignment_held_next_ungated(study=piloted, user=annotator)
        if held_next.gate_may_wait:
            assert held_next.assignment is None
        else:
            assert held_next.assignment == assignment_held_next(study=piloted, user=annotator)
            assert held_next.assignment is not None
        assert held_next.gate_may_wait == bool(study_round_ids_held_back(study=piloted))
        return held_next.gate_may_wait

    assert not may_wait()  # the pilot has no target
    rounds_set("Pilot", target_kappa=0.6)
    assert may_wait()
    rounds_set("Pilot", target_kappa=None, dimension_targets={"screening": 0.7})
    assert may_wait()  # a dimension's target alone gates the main round too
    rounds_set("Pilot", dimension_targets={})
    assert not may_wait()
    rounds_set("Pilot", target_kappa=0.6)
    rounds_set("Pilot", position=7)  # after the main round: it gates nothing before it
    assert not may_wait()
    rounds_set("Pilot", position=0)
    round_gate_open(round=main(piloted), user=people["manager"], reason="deadline")
    assert not may_wait()


def test_targets_are_for_managers_and_required_dimensions(piloted, people):
    with pytest.raises(PermissionDeniedError):
        round_targets_set(round=pilot(piloted), user=people["annotator1"], target_kappa=0.6)
    with pytest.raises(ApplicationError, match="not a required dimension"):
        round_targets_set(
            round=pilot(piloted),
            user=people["manager"],
            target_kappa=None,
            dimension_targets={"symptom": 0.5},
        )
    with pytest.raises(ApplicationError, match="between -1 and 1"):
        round_targets_set(round=pilot(piloted), user=people["manager"], target_kappa=1.5)
    round_targets_set(
        round=pilot(piloted),
        user=people["manager"],
        target_kappa=0.6,
        dimension_targets={"screening": 0.7},
    )
    assert pilot(piloted).dimension_targets == {"screening": 0.7}
    event = StudyEvent.objects.get(study=piloted)
    assert event.action == "round_saved" and event.actor == people["manager"]


def test_main_round_waits_until_a_manager_opens_it(piloted, people):
    annotator = people["annotator1"]
    assert study_round_ids_held_back(study=piloted) == set()  # no target yet
    round_targets_set(round=pilot(piloted), user=people["manager"], target_kappa=0.6)
    assert study_round_ids_held_back(study=piloted) == {main(piloted).pk}
    (state,) = study_gate_states(study=piloted)
    assert not state.is_open
    assert "Pilot" in state.wording and "not judged" in state.wording
    # Only pilot items are handed out or listed.
    assignment = item_next_for_annotator(study=piloted, user=annotator)
    assert assignment.item.round == pilot(piloted)
    queued = queue_for_annotator(
        study=piloted, user=annotator, held_back=study_round_ids_held_back(study=piloted)
    )
    assert {a.item.round.name for a in queued} == {"Pilot"}
    for _ in range(PILOT_SIZE):
        assert item_next_for_annotator(study=piloted, user=annotator).item.round == pilot(piloted)
        submit(assignment.item, annotator, labels={"screening": ["include"]})
        assignment = item_next_for_annotator(study=piloted, user=annotator)
        if assignment is None:
            break
    assert assignment is None  # every pilot item done: the main round still gives nothing

    with pytest.raises(PermissionDeniedError):
        round_gate_open(round=main(piloted), user=annotator, reason="hurry")
    with pytest.raises(ApplicationError, match="Say why"):
        round_gate_open(round=main(piloted), user=people["manager"], reason="")
    round_gate_open(round=main(piloted), user=people["manager"], reason="deadline")
    assert study_round_ids_held_back(study=piloted) == set()
    (state,) = study_gate_states(study=piloted)
    assert state.is_open and state.opened_anyway
    assert item_next_for_annotator(study=piloted, user=annotator).item.round == main(piloted)
    event = StudyEvent.objects.filter(study=piloted, action="gate_opened").get()
    assert event.reason == "deadline" and event.details["round"] == "Main"
    with pytest.raises(ApplicationError, match="does not wait"):
        round_gate_open(round=main(piloted), user=people["manager"], reason="again")


def test_main_round_opens_when_the_pilot_passes_on_the_headline(piloted, people):
    round_targets_set(round=pilot(piloted), user=people["manager"], target_kappa=0.8)
    first, second = people["annotator1"], people["annotator2"]
    for number, item in enumerate(pilot(piloted).items.order_by("id")):
        screening = ["include"] if number % 2 else ["not_a_bug"]
        submit(item, first, labels={"screening": screening})
        submit(item, second, labels={"screening": screening})
    (state,) = study_gate_states(study=piloted)
    assert state.is_open and not state.opened_anyway
    assert state.pilots[0].verdict == "passed"
    # The next hand-out records that the round opened, so that it is not computed again.
    assignment = item_next_for_annotator(study=piloted, user=first)
    assert assignment.item.round == main(piloted)
    assert main(piloted).gate_opened_at is not None
    event = StudyEvent.objects.get(study=piloted, action="gate_passed")
    assert event.actor is None and event.details["pilots"] == ["Pilot"]


def test_a_failed_pilot_names_the_dimension(piloted, people):
    round_targets_set(round=pilot(piloted), user=people["manager"], target_kappa=0.8)
    first, second = people["annotator1"], people["annotator2"]
    for number, item in enumerate(pilot(piloted).items.order_by("id")):
        screening = ["include"] if number % 2 else ["not_a_bug"]
        other = screening if number % 3 else ["out_of_scope"]
        submit(item, first, labels={"screening": screening})
        submit(item, second, labels={"screening": other})
    (state,) = study_gate_states(study=piloted)
    assert not state.is_open
    assert state.held_back_by[0].failing == ["Screening"]
    assert "not passed on: Screening" in state.wording
    assert not Assignment.objects.filter(
        item__round=main(piloted), status=Assignment.Status.SUBMITTED
    ).exists()


def test_pages_and_api_set_targets_show_the_gate_and_open_it(client, piloted, people):
    client.force_login(people["manager"])
    response = client.post(
        "/studies/piloted/rounds/",
        {"action": "targets", "round": pilot(piloted).pk, "target_kappa": "0.6"},
    )
    assert response.status_code == 302
    overview = client.get("/studies/piloted/").text
    assert "Pilot gate" in overview and "waiting for the pilot" in overview
    assert "Open anyway" in client.get("/studies/piloted/rounds/").text

    api = APIClient()
    api.force_login(people["manager"])
    rounds = api.get("/api/studies/piloted/rounds/").json()
    assert [row["name"] for row in rounds] == ["Pilot", "Main"]
    assert rounds[0]["target_kappa"] == 0.6 and rounds[1]["gate"]["is_open"] is False
    assert rounds[1]["gate"]["held_back_by"] == ["Pilot"]
    response = api.post(
        f"/api/studies/piloted/rounds/{main(piloted).pk}/open/",
        {"reason": "the pilot is too small to judge"},
        format="json",
    )
    assert response.status_code == 200 and response.json()["gate"]["is_open"] is True
    assert response.json()["gate"]["opened_by"] == "manager"
    response = api.post(
        f"/api/studies/piloted/rounds/{pilot(piloted).pk}/targets/",
        {"target_kappa": None, "dimension_targets": {"screening": 0.5}},
        format="json",
    )
    assert response.status_code == 200
    assert response.json()["dimension_targets"] == {"screening": 0.5}
