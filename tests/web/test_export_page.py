"""The export page (/studies/{slug}/export/): for the study's managers only (annotators and
adjudicators 403, outsiders 404, also on the job list and the downloads); a POST with its CSRF
token starts a job; the job list polls while a job runs; a finished job's file and a small
study's dataset download after the same check."""

import io

import orjson
import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse

from exports.jobs import export_job_start
from exports.models import ExportJob
from exports.services import export_job_run
from labeling.services.studies import study_create
from tests.conftest import PASSWORD
from tests.exports.dataset_study import resolved_study_make


@pytest.fixture
def resolved_study(codebook_version, sample_issues, people, make_user):
    return resolved_study_make(codebook_version, sample_issues, people, make_user)


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


def login(user, **options) -> Client:
    client = Client(**options)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def finished_job(study, user, **options) -> ExportJob:
    job = export_job_start(study=study, user=user, **options)
    return export_job_run(job_id=job.pk)


def urls(study, job: ExportJob) -> list[str]:
    return [
        reverse("study_export", args=[study.slug]),
        reverse("study_export_jobs", args=[study.slug]),
        reverse("export_job_download", args=[study.slug, job.pk]),
        reverse("study_export_download", args=[study.slug]) + "?format=jsonl&raw=on",
    ]


@pytest.mark.parametrize(
    ("role", "status"), [("annotator1", 403), ("adjudicator", 403), ("outsider", 404)]
)
def test_only_managers_reach_the_page_the_jobs_and_the_downloads(
    resolved_study, people, role, status
):
    job = finished_job(resolved_study, people["manager"], raw=True)
    client = login(people[role])

    for url in urls(resolved_study, job):
        assert client.get(url).status_code == status, url
    assert client.post(urls(resolved_study, job)[0], {"format": "csv"}).status_code == status
    assert ExportJob.objects.count() == 1


def test_anonymous_visitors_are_sent_to_the_login(resolved_study, people, client):
    job = finished_job(resolved_study, people["manager"])
    for url in urls(resolved_study, job):
        response = client.get(url)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_manager_sees_the_link_the_form_and_starts_a_job(resolved_study, people):
    client = login(people["manager"])
    overview = client.get(reverse("study_overview", args=[resolved_study.slug])).content.decode()
    assert f'href="/studies/{resolved_study.slug}/export/">Export</a>' in overview
    annotator_page = login(people["annotator1"]).get(
        reverse("study_overview", args=[resolved_study.slug])
    )
    assert "/export/" not in annotator_page.content.decode()

    response = client.post(
        f"/studies/{resolved_study.slug}/export/",
        {"format": "parquet", "raw": "on", "pseudonymise": "on"},
        follow=True,
    )

    job = ExportJob.objects.get()
    assert (job.format, job.raw, job.pseudonymise, job.requested_by) == (
        "parquet", True, True, people["manager"],
    )  # fmt: skip
    page = response.content.decode()
    assert f"Export {job.pk} (Parquet) started." in page
    # Queued: the list asks again every 2 s.
    assert 'hx-trigger="every 2s"' in page and "Queued" in page


def test_a_post_without_the_csrf_token_is_refused(resolved_study, people):
    client = login(people["manager"], enforce_csrf_checks=True)

    response = client.post(f"/studies/{resolved_study.slug}/export/", {"format": "csv"})

    assert response.status_code == 403
    assert not ExportJob.objects.exists()


def test_a_bad_format_is_a_400_with_the_form(resolved_study, people):
    response = login(people["manager"]).post(
        f"/studies/{resolved_study.slug}/export/", {"format": "xlsx"}
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    assert not ExportJob.objects.exists()


def test_a_finished_job_is_listed_with_its_download_and_no_more_polling(resolved_study, people):
    job = finished_job(resolved_study, people["manager"], format="csv", raw=True)
    client = login(people["manager"])

    listing = client.get(f"/studies/{resolved_study.slug}/export/jobs/").content.decode()
    download = client.get(f"/studies/{resolved_study.slug}/export/jobs/{job.pk}/download/")

    assert "every 2s" not in listing and "Done" in listing
    assert f"/studies/{resolved_study.slug}/export/jobs/{job.pk}/download/" in listing
    assert download.status_code == 200
    assert download["Content-Disposition"].startswith("attachment")
    assert 'filename="export-me-dataset-raw.csv"' in download["Content-Disposition"]
    with job.file.open("rb") as stored:
        assert b"".join(download.streaming_content) == stored.read()


def test_another_studys_job_is_a_404_under_this_study(resolved_study, codebook_version, people):
    other = study_create(
        slug="other", name="Other", codebook_version=codebook_version, managers=[people["manager"]]
    )
    job = finished_job(other, people["manager"])
    client = login(people["manager"])

    response = client.get(f"/studies/{resolved_study.slug}/export/jobs/{job.pk}/download/")

    assert response.status_code == 404
    assert client.get(f"/studies/other/export/jobs/{job.pk}/download/").status_code == 200


def test_a_job_not_finished_has_no_download(resolved_study, people):
    job = export_job_start(study=resolved_study, user=people["manager"])
    response = login(people["manager"]).get(
        f"/studies/{resolved_study.slug}/export/jobs/{job.pk}/download/"
    )
    assert response.status_code == 404


@pytest.mark.parametrize("file_format", ["csv", "jsonl", "parquet"])
def test_a_small_study_downloads_at_once(resolved_study, people, file_format):
    client = login(people["manager"])

    response = client.get(
        f"/studies/{resolved_study.slug}/export/download/",
        {"format": file_format, "raw": "on", "pseudonymise": "on"},
    )

    assert response.status_code == 200
    content = b"".join(response.streaming_content)
    for username in ("annotator1", "annotator2", "annotator3"):
        assert username.encode() not in content
    assert b"annotator-01" in content
    if file_format == "jsonl":
        assert len(content.splitlines()) == 12
        assert orjson.loads(content.splitlines()[0])["issue"]
    elif file_format == "parquet":
        assert pq.ParquetFile(io.BytesIO(content)).metadata.num_rows == 12
    else:
        assert content.startswith(b"issue,repository")


def test_a_large_study_streams_csv_and_jsonl_and_sends_parquet_to_a_job(
    resolved_study, people, monkeypatch
):
    """CSV and JSONL stream whatever the size; Parquet, written whole before it is sent, past
    DIRECT_PARQUET_MAX_ITEMS: the address refuses it, Download now starts a job and says so."""
    monkeypatch.setattr("exports.services.DIRECT_PARQUET_MAX_ITEMS", 5)
    monkeypatch.setattr("web.views.export.DIRECT_PARQUET_MAX_ITEMS", 5)
    client = login(people["manager"])
    url = f"/studies/{resolved_study.slug}/export/"

    page = client.get(url).content.decode()
    streamed = client.get(f"{url}download/", {"format": "jsonl"})
    refused = client.get(f"{url}download/", {"format": "parquet"})
    asked = client.post(url, {"format": "parquet", "action": "download"}, follow=True)

    assert 'value="download" class="primary">Download now' in page
    assert "Parquet is written whole before it can be sent" in page
    assert streamed.status_code == 200 and streamed.streaming
    assert len(b"".join(streamed.streaming_content).splitlines()) == 12
    assert refused.status_code == 400 and b"start an export" in refused.content
    job = ExportJob.objects.get()
    assert job.format == "parquet" and job.requested_by == people["manager"]
    assert f"Export {job.pk} (Parquet) started" in asked.content.decode()
    assert "written whole before it is sent" in asked.content.decode()


def test_the_download_streams_the_bytes_of_the_jobs_file(resolved_study, people):
    """The same pieces, whichever way: a download now and a job's file are the same bytes."""
    client = login(people["manager"])
    for file_format in ("csv", "jsonl"):
        job = finished_job(
            resolved_study, people["manager"], format=file_format, raw=True, pseudonymise=True
        )
        response = client.get(
            f"/studies/{resolved_study.slug}/export/download/",
            {"format": file_format, "raw": "on", "pseudonymise": "on"},
        )
        assert response.streaming
        assert response["Content-Disposition"] == (
            f'attachment; filename="export-me-dataset-raw-pseudonymised.{file_format}"'
        )
        with job.file.open("rb") as stored:
            assert b"".join(response.streaming_content) == stored.read()


def test_one_form_downloads_now_or_starts_a_job(resolved_study, people):
    """One form and its options, two buttons: Download now goes to the download's address
    with the options and no token in it; Start export starts a job."""
    client = login(people["manager"])
    url = f"/studies/{resolved_study.slug}/export/"
    page = client.get(url).content.decode()
    assert page.count('<form method="post" action="/studies/') == 1
    assert 'value="download" class="primary">Download now' in page

    response = client.post(url, {"format": "csv", "raw": "on", "action": "download"})
    assert response.status_code == 302
    location = response["Location"]
    assert location.startswith(f"/studies/{resolved_study.slug}/export/download/?")
    assert "format=csv" in location and "raw=True" in location
    assert "pseudonymise" not in location and "csrf" not in location
    download = client.get(location)
    assert download.status_code == 200
    assert b"".join(download.streaming_content).startswith(b"issue,repository")
    assert not ExportJob.objects.exists()

    response = client.post(url, {"format": "jsonl", "action": "job"})
    assert response.status_code == 302
    assert ExportJob.objects.get().format == "jsonl"
