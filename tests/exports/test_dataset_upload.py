"""Restoring a study from an uploaded dataset file, on the page (/studies/restore/) and the API
(POST /api/studies/restore/): the command's rules and messages, the uploader as manager,
nothing half-restored, a slug taken (also meanwhile), size limit, who may."""

import html
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import Permission
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db.models.query import QuerySet
from django.test import Client
from rest_framework.test import APIClient

from exports.formats import FORMATS
from labeling.access import MANAGER, study_roles
from labeling.models import Annotation, Resolution, Study, StudyItem
from tests.exports.dataset_study import resolved_study_make


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


@pytest.fixture
def creator(make_user):
    user = make_user("creator")
    user.user_permissions.add(Permission.objects.get(codename="add_study"))
    return user


@pytest.fixture
def dataset_file(resolved_study, tmp_path) -> Path:
    path = tmp_path / "dataset.jsonl"
    call_command("export_dataset", "--study", resolved_study.slug, "--output", str(path), "--raw")
    return path


def upload(path: Path, name: str | None = None, content: bytes | None = None):
    data = path.read_bytes() if content is None else content
    return SimpleUploadedFile(name or path.name, data, "application/octet-stream")


def counts() -> tuple[int, int, int, int]:
    return (
        Study.objects.count(),
        StudyItem.objects.count(),
        Annotation.objects.count(),
        Resolution.objects.count(),
    )


def test_the_page_restores_the_study_and_its_uploader_manages_it(
    client, creator, resolved_study, dataset_file
):
    client.force_login(creator)
    assert client.get("/studies/restore/").status_code == 200

    response = client.post("/studies/restore/", {"file": upload(dataset_file), "study": "again"})

    assert response.status_code == 302 and response.url == "/studies/again/"
    restored = Study.objects.get(slug="again")
    assert restored.items.count() == resolved_study.items.count()
    assert MANAGER in study_roles(study=restored, user=creator)
    assert "Restored the study again" in html.unescape(client.get(response.url).text)
    event = restored.events.get()
    assert (event.action, event.actor, event.details["file"]) == (
        "restored", creator, dataset_file.name,
    )  # fmt: skip


@pytest.mark.parametrize("file_format", FORMATS)
def test_the_api_restores_with_201_and_the_counts(
    creator, resolved_study, file_format, tmp_path, settings
):
    # Larger than this, an upload is a temporary file rather than one in memory: both are read.
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 0 if file_format == "parquet" else 2_621_440
    path = tmp_path / f"dataset.{file_format}"
    call_command("export_dataset", "--study", resolved_study.slug, "--output", str(path), "--raw")
    api = APIClient()
    api.force_login(creator)

    response = api.post(
        "/api/studies/restore/",
        {"file": upload(path), "study": "by-api"},
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    body = response.json()
    restored = Study.objects.get(slug="by-api")
    assert body["study"] == "by-api"
    assert body["rows"] == restored.items.count() == resolved_study.items.count()
    assert (
        body["annotations"] == Annotation.objects.filter(assignment__item__study=restored).count()
    )
    assert body["resolutions"] > 0
    assert MANAGER in study_roles(study=restored, user=creator)


def test_a_bad_row_restores_nothing_and_is_listed_as_the_command_lists_it(
    client, creator, resolved_study, dataset_file, tmp_path
):
    lines = dataset_file.read_bytes().splitlines()
    row = orjson.loads(lines[3])
    row["item_status"] = "pending-forever"
    lines[3] = orjson.dumps(row)
    lines.append(b"{not json")
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\n".join(lines) + b"\n")
    before = counts()
    client.force_login(creator)

    page = client.post("/studies/restore/", {"file": upload(bad), "study": "bad"})

    assert page.status_code == 400 and counts() == before
    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", str(bad), "--study", "bad")
    text = html.unescape(page.text)
    first, *listing = str(refused.value).splitlines()
    assert first in text  # "2 problems; nothing was restored."
    for line in listing:  # "<file>: line 4: item_status: one of ..."
        assert line.removeprefix(f"{bad}: ") in text
    api = APIClient()
    api.force_login(creator)
    answer = api.post(
        "/api/studies/restore/", {"file": upload(bad), "study": "bad"}, format="multipart"
    )
    assert answer.status_code == 400 and counts() == before
    error = answer.json()["error"]
    assert error["message"] == first
    assert [number for number, _ in error["details"]["errors"]] == [4, len(lines)]
    assert error["details"]["place"] == "line"


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("dataset.jsonl", b"\x00\x01\x02 binary", "not valid JSON"),
        ("dataset.jsonl", b'{"study": "x\\u0000y"}\n', "holds a NUL character"),
        ("dataset.jsonl", b"\n\n", "the file holds no rows"),
        ("dataset.csv", b"\xff\xfe not csv", "not a CSV header"),
        ("dataset.parquet", b"PAR1 not parquet", "not a Parquet file"),
        ("dataset.png", b"\x89PNG\r\n", "Cannot tell the format of dataset.png"),
    ],
)
def test_malformed_files_are_refused_with_a_message_and_nothing_stored(
    creator, resolved_study, name, content, message
):
    before = counts()
    api = APIClient()
    api.force_login(creator)

    response = api.post(
        "/api/studies/restore/",
        {"file": SimpleUploadedFile(name, content)},
        format="multipart",
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert message in error["message"] + str(error["details"])
    assert counts() == before


def test_a_nul_inside_a_real_row_is_refused(client, creator, resolved_study, dataset_file):
    lines = dataset_file.read_bytes().splitlines()
    row = orjson.loads(lines[0])
    row["title"] = "bad\x00title"
    lines[0] = orjson.dumps(row)
    client.force_login(creator)

    response = client.post(
        "/studies/restore/",
        {"file": upload(dataset_file, content=b"\n".join(lines)), "study": "nul"},
    )

    assert response.status_code == 400
    assert "line 1: title: holds a NUL character" in html.unescape(response.text)
    assert not Study.objects.filter(slug="nul").exists()


def test_an_existing_slug_is_a_clear_400(client, creator, resolved_study, dataset_file):
    client.force_login(creator)
    before = counts()

    page = client.post("/studies/restore/", {"file": upload(dataset_file)})  # the file's slug

    assert page.status_code == 400 and counts() == before
    assert f"a study {resolved_study.slug!r} exists already" in html.unescape(page.text)


def test_a_slug_taken_while_restoring_is_a_400_not_a_500(
    creator, resolved_study, dataset_file, monkeypatch
):
    """Another request creates the study between the checks and the insert: the database's
    unique constraint refuses it, and the answer says why."""
    exists = QuerySet.exists

    def blind_to_studies(self):
        return False if self.model is Study else exists(self)

    monkeypatch.setattr(QuerySet, "exists", blind_to_studies)
    before = counts()
    api = APIClient()
    api.force_login(creator)

    response = api.post(
        "/api/studies/restore/",
        {"file": upload(dataset_file), "study": resolved_study.slug},
        format="multipart",
    )

    assert response.status_code == 400
    assert "was created while the file was restored" in response.json()["error"]["message"]
    assert counts() == before


def test_a_file_over_the_limit_is_refused_unread(
    client, creator, resolved_study, dataset_file, settings
):
    settings.DATASET_UPLOAD_MAX_BYTES = 100
    before = counts()
    client.force_login(creator)
    page = client.post("/studies/restore/", {"file": upload(dataset_file), "study": "big"})
    assert page.status_code == 400 and "file is larger than 100 bytes" in page.text
    api = APIClient()
    api.force_login(creator)
    answer = api.post("/api/studies/restore/", {"file": upload(dataset_file)}, format="multipart")
    assert answer.status_code == 400
    assert "file is larger than 100 bytes" in str(answer.json()["error"]["details"])
    assert counts() == before


def test_only_those_who_set_studies_up_restore(client, people, dataset_file):
    """The new-study page's rule: a study's manager without the add-study permission is
    refused; a visitor is sent to sign in (the page) or answered 401 (the API)."""
    before = counts()
    anonymous = Client()
    assert anonymous.get("/studies/restore/").url.startswith("/accounts/login/")
    assert APIClient().post("/api/studies/restore/", {}, format="multipart").status_code == 401
    client.force_login(people["manager"])
    assert client.get("/studies/restore/").status_code == 403
    assert client.post("/studies/restore/", {"file": upload(dataset_file)}).status_code == 403
    api = APIClient()
    api.force_login(people["manager"])
    refused = api.post("/api/studies/restore/", {"file": upload(dataset_file)}, format="multipart")
    assert refused.status_code == 403
    assert counts() == before


def test_the_form_needs_its_csrf_token(creator, dataset_file):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(creator)
    before = counts()
    response = browser.post("/studies/restore/", {"file": upload(dataset_file), "study": "x"})
    assert response.status_code == 403 and counts() == before
    assert 'name="csrfmiddlewaretoken"' in browser.get("/studies/restore/").text
