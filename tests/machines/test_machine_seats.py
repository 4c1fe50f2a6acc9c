"""The one human replaced design: the chosen language model takes seats (free ones, or those of
people who have not opened the item), its runs fill them, its labels then count toward k and in
gold; choosing none gives the unfilled seats back; the scikit-learn annotator and closed studies
are refused; the machine figures never measure a machine against its own seats."""

from collections import Counter

import pytest
from django.test import Client
from django.utils import timezone

from labeling.agreement_report import study_agreement_report
from labeling.models import Annotation, Assignment, Resolution, Study, StudyEvent, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from machines.models import MachineAnnotator
from machines.runs import machine_run_execute
from machines.seats import study_machine_rater_set
from machines.services import machine_annotator_get_or_create, machine_run_request
from tests.conftest import SCREENED_IN


@pytest.fixture
def model(study, endpoint):
    # What the people of these tests answer: SCREENED_IN, nothing on the other dimensions.
    endpoint.choose = lambda prompt, dimension, categories, multi: SCREENED_IN.get(dimension, [])
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in", name="model"
    )
    return annotator


def _run(annotator):
    return machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)


def _submit(assignment, user) -> None:
    assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()},
        submit=True,
    )


def _seats(annotator):
    annotator.refresh_from_db()
    return Assignment.objects.filter(annotator=annotator.rater_user)


def test_the_machine_takes_unopened_seats_and_its_run_fills_them(study, people, model):
    items = list(study.items.filter(status=StudyItem.Status.OPEN, annotators_needed__gte=2))
    opened = Assignment.objects.get(item=items[0], annotator=people["annotator1"])
    Assignment.objects.filter(item=items[0]).update(started_at=timezone.now())

    change = study_machine_rater_set(study=study, annotator=model, by=people["manager"])

    # Every item needs two; both seats were people's; all but the started item gave one up.
    assert change.taken == change.withdrawn == len(items) - 1
    assert change.filled == 0 and change.given_back == 0
    seats = _seats(model)
    assert not seats.filter(item=items[0]).exists()
    assert seats.count() == len(items) - 1
    assert Assignment.objects.filter(pk=opened.pk).exists()
    # The most loaded person gives a seat up first: the two end even, one apart at most.
    kept = Counter(
        Assignment.objects.filter(item__study=study)
        .exclude(annotator=model.rater_user)
        .values_list("annotator__username", flat=True)
    )
    assert abs(kept["annotator1"] - kept["annotator2"]) <= 1
    assert sum(kept.values()) == 2 * len(items) - (len(items) - 1)
    user = model.rater_user
    assert not user.is_active and not user.has_usable_password()
    assert not study.memberships.filter(user=user).exists()
    event = StudyEvent.objects.get(study=study, action=StudyEvent.Action.MACHINE_RATER)
    assert event.actor == people["manager"] and event.details["machine"] == "model"

    run = _run(model)
    assert run.items_done == run.items_total
    assert seats.filter(status=Assignment.Status.SUBMITTED).count() == len(items) - 1
    seat = seats.select_related("item").first()
    stored = {
        annotation.dimension.key: sorted(c.key for c in annotation.categories.all())
        for annotation in Annotation.objects.filter(assignment=seat)
    }
    assert {key: keys for key, keys in stored.items() if keys} == SCREENED_IN
    assert seat.annotations.first().revisions.get().reason == f"machine run {run.pk}"

    # The machine's submission counts toward k: the person's makes the item resolve.
    item = seat.item
    assert StudyItem.objects.get(pk=item.pk).status == StudyItem.Status.OPEN
    person = Assignment.objects.exclude(annotator=user).get(item=item)
    _submit(person, person.annotator)
    item.refresh_from_db()
    assert item.status == StudyItem.Status.RESOLVED
    assert Resolution.objects.filter(item=item, method=Resolution.Method.CONSENSUS).exists()

    # In the human figures it is a rater; in the machine figures it is never its own human.
    report = study_agreement_report(study=study)
    root_cause = report["dimensions"]["root_cause"]
    assert user.username not in root_cause["machines"]["model"]["kappa_vs_humans"]
    assert root_cause["machines"]["model"]["counts_as_rater"] is True


def test_choosing_none_gives_the_unfilled_seats_back(study, people, model):
    items = study.items.filter(status=StudyItem.Status.OPEN, annotators_needed__gte=2)
    study_machine_rater_set(study=study, annotator=model)
    seat = _seats(model).first()
    # One seat filled by hand stands for one the machine submitted before the change.
    Assignment.objects.filter(pk=seat.pk).update(status=Assignment.Status.SUBMITTED)

    change = study_machine_rater_set(study=study, annotator=None, by=people["manager"])

    assert change.given_back == items.count() - 1
    assert list(_seats(model)) == [Assignment.objects.get(pk=seat.pk)]
    # Pre-assigned again: every item has its two raters, people where the machine gave back.
    for item in items:
        assert item.assignments.count() == 2
    assert not MachineAnnotator.objects.filter(counts_toward_k=True).exists()
    assert StudyEvent.objects.filter(action=StudyEvent.Action.MACHINE_RATER).count() == 2


def test_a_run_takes_the_seats_of_items_added_since(study, people, model):
    study_machine_rater_set(study=study, annotator=model)
    held = _seats(model)
    item = held.first().item
    held.filter(item=item).delete()
    run = _run(model)
    assert run.status == "finished"
    assert _seats(model).filter(item=item, status=Assignment.Status.SUBMITTED).exists()


def test_the_scikit_learn_annotator_and_closed_studies_are_refused(study, people, model):
    from common.exceptions import ApplicationError

    classical = MachineAnnotator.objects.create(
        study=study, name="scikit-learn", kind=MachineAnnotator.Kind.CLASSICAL
    )
    with pytest.raises(ApplicationError, match="learns from gold"):
        study_machine_rater_set(study=study, annotator=classical)
    Study.objects.filter(pk=study.pk).update(status=Study.Status.CLOSED)
    with pytest.raises(ApplicationError, match="closed"):
        study_machine_rater_set(study=study, annotator=model)
    # A machine chosen before the study closed: its run takes no seat in the closed study.
    MachineAnnotator.objects.filter(pk=model.pk).update(counts_toward_k=True)
    model.refresh_from_db()
    _run(model)
    assert not Assignment.objects.filter(annotator__username__startswith="machine.").exists()


def test_the_page_and_the_api_choose_the_rater(study, people, model):
    manager = Client()
    manager.force_login(people["manager"])
    response = manager.post(
        "/studies/demo/machines/", {"action": "rater", "annotator": model.pk}, follow=True
    )
    assert "model now counts as one of the k raters: it took" in response.content.decode()

    response = manager.put(
        "/api/studies/demo/machines/rater/", {"annotator": None}, content_type="application/json"
    )
    assert response.status_code == 200
    body = response.json()
    assert body["machine_rater"] is None and body["given_back"] == _seats_total(study)
    response = manager.put(
        "/api/studies/demo/machines/rater/",
        {"annotator": "model"},
        content_type="application/json",
    )
    assert response.status_code == 200 and response.json()["taken"] > 0
    listed = manager.get("/api/studies/demo/machines/").json()["annotators"][0]
    assert listed["seat_username"] == "machine.demo.model" and listed["counts_toward_k"]
    missing = manager.put(
        "/api/studies/demo/machines/rater/",
        {"annotator": "nobody"},
        content_type="application/json",
    )
    assert missing.status_code == 404

    annotator = Client()
    annotator.force_login(people["annotator1"])
    refused = annotator.put(
        "/api/studies/demo/machines/rater/", {"annotator": None}, content_type="application/json"
    )
    assert refused.status_code == 403
    assert MachineAnnotator.objects.get(pk=model.pk).counts_toward_k


def _seats_total(study) -> int:
    return study.items.filter(status=StudyItem.Status.OPEN, annotators_needed__gte=2).count()
