"""Exports over the API: GET /api/studies/{slug}/dataset/ (the dataset streamed at once),
POST /api/studies/{slug}/exports/ (202 with the job), GET the study's jobs, GET
/api/exports/{id}/ (status, progress, download URL when done) and its download. Managers only:
annotators 403 on the study's routes, 404 on a job; another study's job 404; a bad format a 400
in the one error shape; every route in the schema."""

import io

import orjson
import pyarrow.parquet as pq
import pytest
from rest_framework.test import APIClient

from exports.jobs import export_job_start
from exports.models import ExportJob
from exports.services import export_job_run
from labeling.services.studies import study_create
from tests.exports.dataset_study import resolved_study_make


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def client_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_manager_starts_follows_and_downloads_an_export(resolved_study, people):
    client = client_for(people["manager"])

    started = client.post(
        f"/api/studies/{resolved_study.slug}/exports/",
        {"format": "csv", "raw": True, "pseudonymise": True},
        format="json",
    )

    assert started.status_code == 202
    body = started.json()
    assert {key: body[key] for key in ("study", "format", "raw", "pseudonymise", "status")} == {
        "study": resolved_study.slug, "format": "csv", "raw": True, "pseudonymise": True,
        "status": "queued",
    }  # fmt: skip
    assert body["rows_total"] == 12 and body["download_url"] is None
    early = client.get(f"/api/exports/{body['id']}/download/")
    assert early.status_code == 409 and early.json()["error"]["code"] == "conflict"

    export_job_run(job_id=body["id"])
    job = client.get(f"/api/exports/{body['id']}/").json()
    listed = client.get(f"/api/studies/{resolved_study.slug}/exports/").json()
    download = client.get(job["download_url"])

    assert job["status"] == "done" and job["percent"] == 100 and job["rows_done"] == 12
    assert job["download_url"].endswith(f"/api/exports/{body['id']}/download/")
    assert [entry["id"] for entry in listed["results"]] == [body["id"]]
    assert download.status_code == 200
    content = b"".join(download.streaming_content)
    assert content.startswith(b"issue,repository") and b"annotator1" not in content


@pytest.mark.parametrize("role", ["annotator1", "adjudicator"])
def test_members_who_do_not_manage_get_403_on_the_study_and_404_on_jobs(
    resolved_study, people, role
):
    job = export_job_run(job_id=export_job_start(study=resolved_study, user=people["manager"]).pk)
    client = client_for(people[role])

    assert client.get(f"/api/studies/{resolved_study.slug}/exports/").status_code == 403
    refused = client.post(f"/api/studies/{resolved_study.slug}/exports/", {}, format="json")
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "permission_denied"
    assert client.get(f"/api/exports/{job.pk}/").status_code == 404
    assert client.get(f"/api/exports/{job.pk}/download/").status_code == 404
    assert ExportJob.objects.count() == 1


def test_outsiders_and_anonymous_callers_see_nothing(resolved_study, people):
    job = export_job_start(study=resolved_study, user=people["manager"])
    outsider = client_for(people["outsider"])
    assert outsider.get(f"/api/studies/{resolved_study.slug}/exports/").status_code == 404
    assert outsider.get(f"/api/exports/{job.pk}/").status_code == 404
    anonymous = APIClient()
    assert anonymous.get(f"/api/studies/{resolved_study.slug}/exports/").status_code in (401, 403)
    assert anonymous.get(f"/api/exports/{job.pk}/").status_code in (401, 403)


def test_a_manager_of_another_study_does_not_see_this_studys_jobs(
    resolved_study, codebook_version, people, make_user
):
    other_manager = make_user("other-manager")
    study_create(slug="other", name="Other", codebook_version=codebook_version,
                 managers=[other_manager])  # fmt: skip
    job = export_job_start(study=resolved_study, user=people["manager"])
    client = client_for(other_manager)

    assert client.get(f"/api/exports/{job.pk}/").status_code == 404
    assert client.get("/api/studies/other/exports/").json()["results"] == []


def test_a_superuser_manages_every_study(resolved_study, make_user):
    admin = make_user("admin", is_superuser=True, is_staff=True)
    response = client_for(admin).post(
        f"/api/studies/{resolved_study.slug}/exports/", {"format": "parquet"}, format="json"
    )
    assert response.status_code == 202


def test_a_bad_request_is_a_400_in_the_one_error_shape(resolved_study, people):
    response = client_for(people["manager"]).post(
        f"/api/studies/{resolved_study.slug}/exports/", {"format": "xlsx"}, format="json"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid" and "format" in error["details"]
    assert not ExportJob.objects.exists()


def test_the_routes_are_in_the_schema_with_their_shapes(db, people):
    schema = client_for(people["manager"]).get("/api/schema/?format=json").json()
    paths = schema["paths"]
    assert set(paths["/api/studies/{slug}/exports/"]) >= {"get", "post"}
    post = paths["/api/studies/{slug}/exports/"]["post"]
    assert "202" in post["responses"]
    assert "ExportJobCreate" in str(post["requestBody"])
    assert "get" in paths["/api/exports/{id}/"]
    assert "get" in paths["/api/exports/{id}/download/"]
    dataset = paths["/api/studies/{slug}/dataset/"]["get"]
    assert {p["name"] for p in dataset["parameters"]} >= {"format", "raw", "pseudonymise"}
    assert {"text/csv", "application/x-ndjson"} <= set(dataset["responses"]["200"]["content"])
    job = schema["components"]["schemas"]["ExportJob"]["properties"]
    assert {"status", "rows_done", "rows_total", "download_url"} <= set(job)


@pytest.mark.parametrize("file_format", ["csv", "jsonl", "parquet"])
def test_a_manager_downloads_the_dataset_at_once(resolved_study, people, file_format):
    """The page's Download now over the API: CSV and JSONL streamed, the same bytes as a job's
    file; Parquet written whole first; pseudonymised as asked."""
    client = client_for(people["manager"])

    response = client.get(
        f"/api/studies/{resolved_study.slug}/dataset/",
        {"format": file_format, "raw": "true", "pseudonymise": "true"},
    )

    assert response.status_code == 200
    assert response["Content-Disposition"] == (
        f'attachment; filename="export-me-dataset-raw-pseudonymised.{file_format}"'
    )
    content = b"".join(response.streaming_content)
    assert b"annotator1" not in content and b"annotator-01" in content
    if file_format == "parquet":
        assert pq.ParquetFile(io.BytesIO(content)).metadata.num_rows == 12
        return
    job = export_job_start(
        study=resolved_study, user=people["manager"], format=file_format, raw=True,
        pseudonymise=True,
    )  # fmt: skip
    job = export_job_run(job_id=job.pk)
    with job.file.open("rb") as stored:
        assert content == stored.read()
    if file_format == "jsonl":
        rows = [orjson.loads(line) for line in content.splitlines()]
        assert len(rows) == 12 and set(rows[0]["raw_codebook_version"]) <= {
            "annotator-01", "annotator-02", "annotator-03"
        }  # fmt: skip


def test_the_dataset_defaults_to_jsonl_of_the_gold_labels(resolved_study, people):
    response = client_for(people["manager"]).get(f"/api/studies/{resolved_study.slug}/dataset/")

    assert response.status_code == 200 and response["Content-Type"] == "application/x-ndjson"
    rows = [orjson.loads(line) for line in b"".join(response.streaming_content).splitlines()]
    assert len(rows) == 12 and "raw" not in rows[0]


def test_the_dataset_is_for_managers_and_refuses_what_it_cannot_send(
    resolved_study, people, monkeypatch
):
    url = f"/api/studies/{resolved_study.slug}/dataset/"
    assert client_for(people["annotator1"]).get(url).status_code == 403
    assert client_for(people["adjudicator"]).get(url).status_code == 403
    assert client_for(people["outsider"]).get(url).status_code == 404
    assert APIClient().get(url).status_code in (401, 403)
    manager = client_for(people["manager"])

    bad = manager.get(url, {"format": "xlsx"})
    monkeypatch.setattr("exports.services.DIRECT_PARQUET_MAX_ITEMS", 5)
    whole = manager.get(url, {"format": "parquet"})
    streamed = manager.get(url, {"format": "csv"})

    assert bad.status_code == 400 and "format" in bad.json()["error"]["details"]
    assert whole.status_code == 400
    assert whole.json()["error"]["details"] == {"items": 12, "max_items": 5}
    assert "start an export" in whole.json()["error"]["message"]
    assert streamed.status_code == 200 and streamed.streaming
