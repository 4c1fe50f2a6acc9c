"""Uploading an annotation CSV into a study and a codebook file, on the pages and the API: the
commands' rules and messages, nothing half-imported, size limits."""

import html
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from labeling.models import Annotation, StudyEvent
from labeling.services.imports import CODEBOOK_FILE_MAX_BYTES
from taxonomy.models import CodebookVersion
from tests.conftest import CODEBOOK_FILE


def csv_file(study, *rows: str) -> SimpleUploadedFile:
    issue = study.items.order_by("id").first().issue
    reference = f"{issue.repository.full_name}#{issue.number}"
    lines = ["issue,annotator,dimension,labels", *(row.format(ref=reference) for row in rows)]
    return SimpleUploadedFile("labels.csv", ("\n".join(lines) + "\n").encode(), "text/csv")


GOOD = (
    "{ref},annotator1,screening,include",
    "{ref},annotator1,symptom,crash",
    "{ref},annotator1,root_cause,api_misuse",
    "{ref},annotator1,fix_pattern,fix_api_usage",
    "{ref},annotator1,debugging_practice,error_message_analysis",
    "{ref},annotator1,testing_practice,no_test_change",
    "{ref},annotator1,training_stage,model_initialization",
)


def test_a_bad_file_imports_nothing_and_lists_each_line_as_the_command_does(
    client, study, people, tmp_path
):
    client.force_login(people["manager"])
    bad = csv_file(study, *GOOD, "{ref},nobody,symptom,crash", "{ref},annotator1,mood,happy")
    page = client.post("/studies/demo/import/", {"file": bad})
    assert page.status_code == 400 and not Annotation.objects.exists()
    # The command's own messages for the same file.
    path = tmp_path / "labels.csv"
    bad.seek(0)
    path.write_bytes(bad.read())
    with pytest.raises(CommandError) as refused:
        call_command("import_annotations", "--study", "demo", str(path))
    listing = str(refused.value)
    for line in listing.splitlines()[1:]:
        message = line.split(":", 2)[2].strip()
        assert message in html.unescape(page.text)
    assert "nothing was imported" in page.text


def test_a_good_file_imports_and_is_logged(client, study, people):
    client.force_login(people["manager"])
    response = client.post("/studies/demo/import/", {"file": csv_file(study, *GOOD)})
    assert response.status_code == 302
    assert Annotation.objects.count() == len(GOOD)
    event = StudyEvent.objects.get(study=study, action="annotations_imported")
    assert event.details["annotations"] == len(GOOD) and event.actor == people["manager"]


def test_api_annotation_import(study, people):
    api = APIClient()
    api.force_login(people["manager"])
    response = api.post(
        "/api/studies/demo/annotation-import/",
        {"file": csv_file(study, "{ref},nobody,symptom,crash")},
        format="multipart",
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["errors"][0][0] == 2
    response = api.post(
        "/api/studies/demo/annotation-import/", {"file": csv_file(study, *GOOD)}, format="multipart"
    )
    assert response.status_code == 200 and response.json()["annotations_written"] == len(GOOD)


def codebook_upload_file(**changes) -> SimpleUploadedFile:
    data = json.loads(CODEBOOK_FILE.read_text())
    data.update(changes)
    return SimpleUploadedFile("codebook.json", json.dumps(data).encode(), "application/json")


def test_codebook_upload_new_draft_version_and_refusals(client, study, people, make_user):
    client.force_login(people["manager"])  # edits the study's codebook
    response = client.post("/codebooks/import/", {"file": codebook_upload_file(version="0.2.0")})
    assert response.status_code == 302
    version = CodebookVersion.objects.get(label="0.2.0")
    assert version.status == "draft" and response.url == f"/codebooks/versions/{version.pk}/"
    # A broken file: the reader's problems, nothing stored.
    broken = codebook_upload_file(version="0.3.0", dimensions=[{"key": "x"}])
    page = client.post("/codebooks/import/", {"file": broken})
    assert page.status_code == 400 and "nothing was stored" in page.text
    assert not CodebookVersion.objects.filter(label="0.3.0").exists()
    # Someone who neither edits it nor sets studies up may not add a version or a codebook.
    client.force_login(people["annotator1"])
    page = client.post("/codebooks/import/", {"file": codebook_upload_file(version="0.4.0")})
    assert page.status_code == 400 and "Only the editors" in page.text
    page = client.post("/codebooks/import/", {"file": codebook_upload_file(name="mine")})
    assert "Only people who set studies up" in page.text
    big = SimpleUploadedFile("big.json", b" " * (CODEBOOK_FILE_MAX_BYTES + 1))
    page = client.post("/codebooks/import/", {"file": big})
    assert f"file is larger than {CODEBOOK_FILE_MAX_BYTES} bytes" in page.text


def test_api_codebook_upload(study, people):
    api = APIClient()
    api.force_login(people["manager"])
    response = api.post(
        "/api/codebooks/import/",
        {"file": codebook_upload_file(version="0.2.0")},
        format="multipart",
    )
    assert response.status_code == 201
    assert response.json()["label"] == "0.2.0" and response.json()["status"] == "draft"
    api.force_login(people["annotator1"])
    response = api.post(
        "/api/codebooks/import/",
        {"file": codebook_upload_file(version="0.5.0")},
        format="multipart",
    )
    assert response.status_code == 403
