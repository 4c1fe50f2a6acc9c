"""Closing a study: every write service refuses, reads stay, the activity log keeps who, what,
when and why; reopening lets the work go on."""

import io

import orjson
import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

from common.exceptions import ApplicationError, PermissionDeniedError
from exports.services import dataset_export_write
from labeling.agreement_report import study_agreement_report
from labeling.models import Membership, Study, StudyEvent, StudyItem
from labeling.services.annotations import annotations_import, assignment_skip
from labeling.services.codebook_migration import study_codebook_migrate
from labeling.services.lifecycle import StudyClosedError, study_close, study_reopen
from labeling.services.resolutions import discussion_comment_add, resolution_decide
from labeling.services.setup import (
    annotator_open_items_reassign,
    study_member_join,
    study_member_leave,
)
from labeling.services.studies import item_next_for_annotator, study_items_add
from taxonomy.drafts import codebook_draft_create, codebook_draft_publish
from tests.labeling.test_resolution import submit


@pytest.fixture
def disputed(study, people):
    """demo with one item in resolution (the annotators disagree on the root cause)."""
    item = study.items.order_by("id").first()
    submit(item, people["annotator1"])
    submit(item, people["annotator2"], root_cause=["configuration_error"])
    item.refresh_from_db()
    assert item.status == StudyItem.Status.IN_RESOLUTION
    return item


def test_only_a_manager_closes_and_a_reason_is_needed(study, people):
    with pytest.raises(PermissionDeniedError):
        study_close(study=study, user=people["annotator1"], reason="done")
    with pytest.raises(ApplicationError, match="Say why"):
        study_close(study=study, user=people["manager"], reason="  ")
    study.refresh_from_db()
    assert study.status == Study.Status.ACTIVE
    assert not StudyEvent.objects.exists()


def test_a_closed_study_refuses_every_write(study, people, disputed, make_user):
    study_close(study=study, user=people["manager"], reason="paper submitted")
    annotator = people["annotator1"]
    open_item = study.items.filter(status=StudyItem.Status.OPEN).order_by("id").first()
    with pytest.raises(StudyClosedError, match="closed"):
        submit(open_item, annotator)
    assignment = open_item.assignments.get(annotator=annotator)
    with pytest.raises(StudyClosedError):
        assignment_skip(assignment=assignment, user=annotator, reason="off topic")
    assert item_next_for_annotator(study=study, user=annotator) is None
    with pytest.raises(StudyClosedError):
        resolution_decide(
            item=disputed,
            dimension_key="root_cause",
            user=people["adjudicator"],
            category_keys=["api_misuse"],
            method="adjudicated",
        )
    with pytest.raises(StudyClosedError):
        discussion_comment_add(item=disputed, user=people["adjudicator"], body="hm")
    newcomer = make_user("newcomer")
    with pytest.raises(StudyClosedError):
        study_member_join(study=study, user=newcomer, role=Membership.Role.ANNOTATOR)
    with pytest.raises(StudyClosedError):
        study_member_leave(study=study, user=annotator, role=Membership.Role.ANNOTATOR)
    with pytest.raises(StudyClosedError):
        annotator_open_items_reassign(study=study, annotator=annotator, by=people["manager"])
    with pytest.raises(StudyClosedError):
        study_items_add(study=study, issue_ids=[])
    with pytest.raises(StudyClosedError):
        annotations_import(study=study, rows=[])
    draft = codebook_draft_create(version=study.codebook_version, label="0.2.0")
    draft = codebook_draft_publish(version=draft)
    with pytest.raises(StudyClosedError):
        study_codebook_migrate(study=study, to_version=draft, by=people["manager"])
    # A manager or an adjudicator role still changes: someone may be needed to reopen it.
    study_member_join(study=study, user=newcomer, role=Membership.Role.MANAGER)
    # Reads stay: the agreement report and the export.
    assert study_agreement_report(study=study)["dimensions"]
    output = io.BytesIO()
    assert dataset_export_write(study=study, format="jsonl", output=output) == study.items.count()


def test_reopening_lets_the_work_go_on_and_the_log_keeps_both(study, people):
    manager = people["manager"]
    study_close(study=study, user=manager, reason="paper submitted")
    with pytest.raises(ApplicationError, match="closed already"):
        study_close(study=study, user=manager, reason="again")
    study_reopen(study=study, user=manager, reason="reviewers asked for more items")
    item = study.items.order_by("id").first()
    submit(item, people["annotator1"])
    log = list(StudyEvent.objects.filter(study=study).order_by("at", "id"))
    assert [(e.action, e.actor, e.reason) for e in log] == [
        ("closed", manager, "paper submitted"),
        ("reopened", manager, "reviewers asked for more items"),
    ]


def test_member_changes_are_logged(study, people, make_user):
    newcomer = make_user("newcomer")
    manager = people["manager"]
    study_member_join(study=study, user=newcomer, role=Membership.Role.ANNOTATOR, by=manager)
    study_member_leave(study=study, user=newcomer, role=Membership.Role.ANNOTATOR, by=manager)
    events = StudyEvent.objects.filter(study=study).order_by("at", "id")
    assert [(e.action, e.details["username"], e.actor) for e in events] == [
        ("member_added", "newcomer", manager),
        ("member_removed", "newcomer", manager),
    ]


def test_the_parquet_export_carries_the_log_unless_pseudonymised(study, people, tmp_path):
    study_close(study=study, user=people["manager"], reason="paper submitted")
    path = tmp_path / "demo.parquet"
    with path.open("wb") as output:
        dataset_export_write(study=study, format="parquet", output=output, raw=True)
    metadata = orjson.loads(pq.ParquetFile(path).metadata.metadata[b"issuecoder.dataset"])
    assert [(e["action"], e["actor"], e["reason"]) for e in metadata["activity"]] == [
        ("closed", "manager", "paper submitted")
    ]
    assert metadata["study_settings"]["status"] == "closed"
    with path.open("wb") as output:
        dataset_export_write(
            study=study, format="parquet", output=output, raw=True, pseudonymise=True
        )
    metadata = orjson.loads(pq.ParquetFile(path).metadata.metadata[b"issuecoder.dataset"])
    assert "activity" not in metadata


def test_pages_close_reopen_and_show_the_log(client, study, people):
    client.force_login(people["annotator1"])
    assert client.post("/studies/demo/status/", {"action": "close", "reason": "x"}).status_code == (
        403
    )
    client.force_login(people["manager"])
    page = client.get("/studies/demo/").text
    assert "Close the study" in page
    response = client.post("/studies/demo/status/", {"action": "close", "reason": "finished"})
    assert response.status_code == 302
    page = client.get("/studies/demo/").text
    assert "This study is closed." in page and "Reopen the study" in page
    assert "finished" in client.get("/studies/demo/activity/").text
    download = client.get("/studies/demo/export/activity/")
    lines = [orjson.loads(line) for line in b"".join(download.streaming_content).splitlines()]
    assert [(row["action"], row["reason"]) for row in lines] == [("closed", "finished")]
    # An annotator's labeling page refuses the save with the message.
    client.force_login(people["annotator1"])
    item = study.items.order_by("id").first()
    response = client.post(f"/studies/demo/items/{item.pk}/", {"action": "draft"})
    assert "This study is closed" in response.text


def test_api_close_reopen_activity_and_the_refusal(study, people):
    api = APIClient()
    api.force_login(people["manager"])
    response = api.post("/api/studies/demo/close/", {"reason": "done"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "closed"
    assert api.post("/api/studies/demo/close/", {}, format="json").status_code == 400
    rows = api.get("/api/studies/demo/activity/").json()["results"]
    assert [(row["action"], row["actor"], row["reason"]) for row in rows] == [
        ("closed", "manager", "done")
    ]
    annotator = APIClient()
    annotator.force_login(people["annotator1"])
    assignment = study.items.order_by("id").first().assignments.get(annotator=people["annotator1"])
    response = annotator.post(
        f"/api/assignments/{assignment.pk}/draft/", {"answers": {}}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["error"]["code"] == "study_closed"
    response = api.post("/api/studies/demo/reopen/", {"reason": "more"}, format="json")
    assert response.status_code == 200 and response.json()["status"] == "active"
