"""Blind labeling (labeling.access): an annotator never sees another annotator's labels of an
item, before or after submitting their own; an adjudicator sees nobody's labels of an item until
its last assignment is submitted and it is in resolution; the study's managers see them all
along. Nothing of them reaches a non-manager through the issue API or the dataset export.

annotator2 labels an item of demo with a rationale nobody else wrote (MARK); each test reads
every page and API route that shows an item, its labels or figures built on them, as each role,
and looks for MARK in what comes back (and for the statuses that refuse the rest).
"""

import pytest
from django.test import Client
from rest_framework.test import APIClient

from exports.jobs import export_job_start
from exports.services import export_job_run
from labeling.models import Assignment, Resolution, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.resolutions import resolution_decide
from labeling.services.setup import study_member_join
from tests.conftest import SCREENED_IN

MARK = "rationale-only-annotator2-wrote"


def _answers(rationale: str, **changed: list[str]) -> dict[str, DimensionAnswer]:
    keys = {**SCREENED_IN, **changed}
    # Every free text of a label carries it: the rationale, the evidence, a proposed category.
    return {
        key: DimensionAnswer(
            category_keys=categories, rationale=rationale, evidence=rationale, proposal=rationale
        )
        for key, categories in keys.items()
    }


@pytest.fixture
def labeled(study, people, settings, tmp_path):
    """One item of demo that annotator2 submitted with MARK and annotator1 has not labeled."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    mine = (
        Assignment.objects.filter(annotator=people["annotator1"], item__study=study)
        .select_related("item")
        .order_by("item_id")
        .first()
    )
    theirs = Assignment.objects.get(item=mine.item, annotator=people["annotator2"])
    assignment_save(
        assignment=theirs, user=people["annotator2"], answers=_answers(MARK), submit=True
    )
    return {"study": study, "item": mine.item, "mine": mine, "theirs": theirs}


def _submit_mine(labeled, people) -> None:
    """annotator1 submits a different root cause: the item goes to resolution."""
    assignment_save(
        assignment=labeled["mine"],
        user=people["annotator1"],
        answers=_answers("mine", root_cause=["configuration_error"]),
        submit=True,
    )
    labeled["item"].refresh_from_db()
    assert labeled["item"].status == StudyItem.Status.IN_RESOLUTION


def _get(user, url: str) -> tuple[int, str]:
    client = APIClient() if url.startswith("/api/") else Client()
    client.force_login(user)
    response = client.get(url)
    body = b"".join(response.streaming_content) if response.streaming else response.content
    return response.status_code, body.decode(errors="replace")


def _urls(labeled) -> list[str]:
    """Every route that shows this item, its issue, its labels or figures built on labels."""
    item, theirs = labeled["item"], labeled["theirs"]
    return [
        f"/studies/demo/items/{item.id}/",
        f"/studies/demo/items/{item.id}/resolve/",
        "/studies/demo/",
        "/studies/demo/queue/",
        "/studies/demo/agreement/",
        "/studies/demo/agreement/?download=csv",
        "/studies/demo/report/",
        "/studies/demo/disagreements/",
        "/studies/demo/recheck/",
        "/studies/demo/proposals/",
        "/studies/demo/codebook/",
        f"/codebooks/versions/{labeled['study'].codebook_version_id}/export/"
        "?format=markdown&study=demo",
        "/studies/demo/export/download/?format=jsonl&raw=on",
        f"/api/assignments/{theirs.id}/",
        "/api/assignments/?page_size=500",
        f"/api/studies/demo/items/{item.id}/labeling/",
        f"/api/studies/demo/items/{item.id}/resolution/",
        f"/api/studies/demo/items/{item.id}/discussion/",
        "/api/studies/demo/queue/?page_size=500",
        "/api/studies/demo/overview/",
        "/api/studies/demo/agreement/",
        "/api/studies/demo/disagreements/",
        "/api/studies/demo/recheck/",
        "/api/studies/demo/dashboard/",
        "/api/studies/demo/proposals/",
        "/api/studies/demo/agreement-by-version/",
        "/api/studies/demo/tables/",
        "/api/studies/demo/tables/distribution-root_cause/",
        f"/api/issues/{item.issue_id}/",
        "/api/issues/?page_size=500",
    ]


def _leaks(user, labeled) -> list[str]:
    return [url for url in _urls(labeled) if MARK in _get(user, url)[1]]


def test_the_mark_is_there_to_be_found(labeled, people):
    """The manager reads annotator2's labels, so the other tests' searches are not vacuous."""
    leaks = _leaks(people["manager"], labeled)
    assert f"/api/assignments/{labeled['theirs'].id}/" in leaks
    assert f"/api/studies/demo/items/{labeled['item'].id}/resolution/" in leaks
    assert "/api/studies/demo/proposals/" in leaks


@pytest.mark.parametrize("submitted", [False, True], ids=["before", "after submitting"])
def test_an_annotator_never_sees_another_annotators_labels(labeled, people, submitted):
    if submitted:
        _submit_mine(labeled, people)
    annotator, item = people["annotator1"], labeled["item"]
    assert _leaks(annotator, labeled) == []
    assert _get(annotator, f"/studies/demo/items/{item.id}/")[0] == 200
    assert _get(annotator, f"/api/assignments/{labeled['theirs'].id}/")[0] == 404
    # Figures built on everyone's labels, and the side by side, are not for annotators.
    for url in ("/studies/demo/agreement/", "/studies/demo/disagreements/"):
        assert _get(annotator, url)[0] == 403, url
    for url in ("/api/studies/demo/agreement/", "/api/studies/demo/disagreements/"):
        assert _get(annotator, url)[0] == 403, url
    assert _get(annotator, f"/studies/demo/items/{item.id}/resolve/")[0] == 404
    # Their own item's outcome (gold labels, discussion) once they submitted, never before.
    outcome = _get(annotator, f"/api/studies/demo/items/{item.id}/resolution/")[0]
    assert outcome == (200 if submitted else 404)


def test_another_annotator_sees_nothing_of_an_item_not_theirs(labeled, people, make_user):
    """An annotator of the study without this item: not even the item's page."""
    third = make_user("annotator3")
    study_member_join(study=labeled["study"], user=third, role="annotator")
    _submit_mine(labeled, people)
    assert _leaks(third, labeled) == []
    item = labeled["item"]
    assert _get(third, f"/studies/demo/items/{item.id}/")[0] == 404
    assert _get(third, f"/api/studies/demo/items/{item.id}/resolution/")[0] == 404
    assert _get(third, f"/api/issues/{item.issue_id}/")[0] == 404


def test_an_adjudicator_sees_no_labels_until_the_item_is_in_resolution(labeled, people):
    adjudicator, item = people["adjudicator"], labeled["item"]
    assert _leaks(adjudicator, labeled) == []
    assert _get(adjudicator, f"/api/studies/demo/items/{item.id}/resolution/")[0] == 404
    assert _get(adjudicator, f"/studies/demo/items/{item.id}/resolve/")[0] == 404
    assert _get(adjudicator, f"/api/assignments/{labeled['theirs'].id}/")[0] == 404

    _submit_mine(labeled, people)
    leaks = _leaks(adjudicator, labeled)
    assert f"/api/studies/demo/items/{item.id}/resolution/" in leaks
    assert f"/studies/demo/items/{item.id}/resolve/" in leaks
    # Resolution shows the labels side by side; the assignments, the issue and the export
    # are still not the adjudicator's to read.
    assert not {
        f"/api/assignments/{labeled['theirs'].id}/",
        "/api/assignments/?page_size=500",
        f"/api/issues/{item.issue_id}/",
        "/api/issues/?page_size=500",
        "/studies/demo/export/download/?format=jsonl&raw=on",
    } & set(leaks)


def test_managers_see_the_labels_while_the_item_is_open(labeled, people, make_user):
    """Through the API (the side by side and the assignments); the resolve page waits for the
    last submission before it lays the labels out."""
    item = labeled["item"]
    assert item.status == StudyItem.Status.OPEN
    root = make_user("root", is_staff=True, is_superuser=True)
    for manager in (people["manager"], root):
        for url in (
            f"/api/studies/demo/items/{item.id}/resolution/",
            f"/api/assignments/{labeled['theirs'].id}/",
        ):
            status, body = _get(manager, url)
            assert status == 200 and MARK in body, url


@pytest.mark.parametrize("role", ["annotator1", "annotator2", "adjudicator", "outsider"])
def test_the_dataset_export_is_for_managers_only(labeled, people, role):
    """A finished export with every annotator's labels by name: no other role reaches it, by the
    page, the job list, the file or the API."""
    _submit_mine(labeled, people)
    job = export_job_run(
        job_id=export_job_start(study=labeled["study"], user=people["manager"], raw=True).pk
    )
    status, body = _get(people["manager"], f"/api/exports/{job.id}/download/")
    assert status == 200 and '"annotator2"' in body
    user = people[role]
    member = role != "outsider"
    for url in (
        "/studies/demo/export/",
        "/studies/demo/export/jobs/",
        f"/studies/demo/export/jobs/{job.id}/download/",
        "/studies/demo/export/download/?format=jsonl&raw=on",
        "/api/studies/demo/exports/",
    ):
        assert _get(user, url)[0] == (403 if member else 404), (role, url)
    for url in (f"/api/exports/{job.id}/", f"/api/exports/{job.id}/download/"):
        assert _get(user, url)[0] == 404, (role, url)


@pytest.mark.parametrize("role", ["annotator1", "adjudicator"])
def test_the_issue_api_carries_no_labels(labeled, people, role):
    """The issue API is the corpus: an issue's text and thread, never anyone's labels."""
    _submit_mine(labeled, people)
    for url in (f"/api/issues/{labeled['item'].issue_id}/", "/api/issues/?page_size=500"):
        status, body = _get(people[role], url)
        assert status == 200 and MARK not in body and "rationale" not in body, url


NOTE = "note-only-the-adjudicator-wrote"


def test_an_annotator_labeling_what_a_screen_in_opened_sees_no_one_elses_labels(
    study, people, make_user
):
    """Both annotators screen an item out (with MARK); the adjudicator screens it in (with NOTE):
    the annotators who label what now applies see nothing of either until they submit, and
    never the other annotators' labels."""
    mine = (
        Assignment.objects.filter(annotator=people["annotator1"], item__study=study)
        .select_related("item")
        .order_by("item_id")
        .first()
    )
    item = mine.item
    theirs = Assignment.objects.get(item=item, annotator=people["annotator2"])
    for assignment in (mine, theirs):
        assignment_save(
            assignment=assignment,
            user=assignment.annotator,
            answers=_answers(MARK, screening=["not_a_bug"]),
            submit=True,
        )
    newcomers = [make_user("annotator3"), make_user("annotator4")]
    for user in newcomers:
        study_member_join(study=study, user=user, role="annotator")
    screening = Resolution.objects.get(item=item, dimension__key="screening")
    resolution_decide(
        item=item,
        dimension_key="screening",
        user=people["adjudicator"],
        category_keys=["include"],
        method="adjudicated",
        note=NOTE,
        expected_version=screening.version,
    )
    labeled = {"study": study, "item": item, "mine": mine, "theirs": theirs}
    relabeler = newcomers[0]
    relabeling = Assignment.objects.get(item=item, annotator=relabeler)
    assert relabeling.dimension_keys and "screening" not in relabeling.dimension_keys

    status, page = _get(relabeler, f"/studies/demo/items/{item.id}/")
    assert status == 200
    # Only the dimensions that now apply are asked; the screening is settled, not shown.
    assert 'data-dimension="screening"' not in page
    assert 'data-dimension="root_cause"' in page
    for url in _urls(labeled):
        body = _get(relabeler, url)[1]
        assert MARK not in body and NOTE not in body, url
    assert _get(relabeler, f"/api/studies/demo/items/{item.id}/resolution/")[0] == 404
    assert _get(relabeler, f"/api/assignments/{theirs.id}/")[0] == 404
    api_page = APIClient()
    api_page.force_login(relabeler)
    asked = api_page.get(f"/api/studies/demo/items/{item.id}/labeling/").json()
    assert [d["key"] for d in asked["dimensions"]] == relabeling.dimension_keys
    assert all(not d["applies_when"] for d in asked["dimensions"])

    assignment_save(
        assignment=relabeling,
        user=relabeler,
        answers={k: a for k, a in _answers("relabeled").items() if k != "screening"},
        submit=True,
    )
    # Once they submitted: the gold labels and the discussion, never anyone's labels.
    assert _leaks(relabeler, labeled) == []
    assert _get(relabeler, f"/api/studies/demo/items/{item.id}/resolution/")[0] == 200
