"""The blind rule for machine labels (machines.selectors): nobody sees a machine's labels of an
item before they submitted their own labels of it; annotators never see them; adjudicators see
them once the item is in resolution; managers without an open assignment of the item see them.
A machine labels demo with a rationale nobody else wrote (MARK); each test reads every page and
API route that shows an item, its labels or figures built on them (tests/test_blind_rule.py's
list, and the machine labels' own route) and looks for MARK."""

import pytest
from rest_framework.test import APIClient

from labeling.models import Assignment, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.setup import study_member_join
from machines.runs import machine_run_execute
from machines.services import machine_annotator_get_or_create, machine_run_request
from tests.conftest import SCREENED_IN
from tests.test_blind_rule import _get, _urls

MARK = "rationale-only-the-machine-wrote"


def _answers(**changed) -> dict[str, DimensionAnswer]:
    return {
        key: DimensionAnswer(category_keys=keys) for key, keys in {**SCREENED_IN, **changed}.items()
    }


@pytest.fixture
def labeled(study, people, endpoint, settings, tmp_path):
    """demo labeled by a machine whose every rationale is MARK; one item of annotator1 that
    annotator2 has submitted and annotator1 has not."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    endpoint.rationale = MARK
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in"
    )
    run = machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)
    assert run.items_done == 45
    mine = (
        Assignment.objects.filter(annotator=people["annotator1"], item__study=study)
        .select_related("item")
        .order_by("item_id")
        .first()
    )
    theirs = Assignment.objects.get(item=mine.item, annotator=people["annotator2"])
    assignment_save(assignment=theirs, user=people["annotator2"], answers=_answers(), submit=True)
    return {"study": study, "item": mine.item, "mine": mine, "theirs": theirs}


def _machine_url(labeled) -> str:
    return f"/api/studies/demo/items/{labeled['item'].id}/machine-labels/"


def _leaks(user, labeled) -> list[str]:
    return [url for url in [*_urls(labeled), _machine_url(labeled)] if MARK in _get(user, url)[1]]


def _submit_mine(labeled, people) -> None:
    assignment_save(
        assignment=labeled["mine"],
        user=people["annotator1"],
        answers=_answers(root_cause=["configuration_error"]),
        submit=True,
    )
    labeled["item"].refresh_from_db()
    assert labeled["item"].status == StudyItem.Status.IN_RESOLUTION


def test_a_manager_reads_the_machine_labels(labeled, people):
    """So that the other tests' searches are not vacuous."""
    status, body = _get(people["manager"], _machine_url(labeled))
    assert status == 200 and MARK in body
    assert _leaks(people["manager"], labeled) == [_machine_url(labeled)]


@pytest.mark.parametrize("submitted", [False, True], ids=["before", "after submitting"])
def test_an_annotator_never_sees_machine_labels(labeled, people, submitted):
    if submitted:
        _submit_mine(labeled, people)
    for name in ("annotator1", "annotator2"):
        assert _leaks(people[name], labeled) == [], name
        assert _get(people[name], _machine_url(labeled))[0] == 404


def test_an_adjudicator_sees_them_once_the_item_is_in_resolution(labeled, people):
    adjudicator = people["adjudicator"]
    assert _leaks(adjudicator, labeled) == []
    assert _get(adjudicator, _machine_url(labeled))[0] == 404
    _submit_mine(labeled, people)
    assert _machine_url(labeled) in _leaks(adjudicator, labeled)


def test_a_manager_who_labels_the_item_waits_for_their_own_submission(labeled, people):
    """A manager who is also one of the item's annotators is blind like any annotator until
    they submitted."""
    manager = people["annotator1"]
    study_member_join(study=labeled["study"], user=manager, role="manager")
    assert _get(manager, _machine_url(labeled))[0] == 404
    assert MARK not in _get(manager, f"/studies/demo/items/{labeled['item'].id}/")[1]
    _submit_mine(labeled, people)
    status, body = _get(manager, _machine_url(labeled))
    assert status == 200 and MARK in body


def test_outsiders_and_anonymous_users_get_nothing(labeled, people):
    assert _get(people["outsider"], _machine_url(labeled))[0] == 404
    response = APIClient().get(_machine_url(labeled))
    assert response.status_code in (401, 403) and MARK not in response.content.decode()


def test_machine_runs_are_for_managers(labeled, people):
    run_id = labeled["study"].machine_annotators.get().runs.get().pk
    status, body = _get(people["manager"], f"/api/studies/demo/machines/runs/{run_id}/")
    assert status == 200 and '"prompt_template"' in body and '"prompt_hash"' in body
    assert _get(people["manager"], "/api/studies/demo/machines/")[0] == 200
    for name in ("annotator1", "adjudicator"):
        for url in ("/api/studies/demo/machines/", f"/api/studies/demo/machines/runs/{run_id}/"):
            assert _get(people[name], url)[0] == 403, (name, url)
    assert _get(people["outsider"], "/api/studies/demo/machines/")[0] == 404
