"""Issue dumps uploaded into a study (/studies/{slug}/import/issues/, /api/studies/{slug}/
issue-imports/): imported in the background as `import_issues` imports them (bad lines skipped
and listed with the command's messages), the study's new issues joining its last round, the
progress polled; who may; size limit; hostile Markdown rendered safe."""

import html
import io
import json
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from corpus import services
from corpus.models import Issue
from ingest.dispatch import issue_upload_start
from ingest.issue_uploads import (
    ORPHAN_AGE,
    UPLOAD_FOLDER,
    issue_upload_files_sweep,
    issue_upload_run,
)
from ingest.models import IssueImportJob
from ingest.tasks import recover_issue_imports, sweep_issue_upload_files
from labeling.models import Assignment, StudyItem
from labeling.services.lifecycle import study_close
from tests.corpus.test_bad_lines import issue
from tests.corpus.test_issue_import import another_thread


def dump(*lines: dict | str, array: bool = False) -> bytes:
    if array:
        return json.dumps(list(lines)).encode()
    return "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines).encode()


def upload(content: bytes, name: str = "issues.jsonl") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content, "application/x-ndjson")


@pytest.fixture
def run_tasks(inline_tasks, django_capture_on_commit_callbacks):
    """Tasks run inline once the request's transaction would commit (the test's never does)."""
    return lambda: django_capture_on_commit_callbacks(execute=True)


BAD_LINES = (
    issue(1),
    "{not json",
    issue(0),
    issue(3, updated_at="2024-01-02T00:00:00"),
    issue(4),
)


def test_the_page_imports_in_the_background_and_lists_the_bad_lines_as_the_command_does(
    client, study, people, run_tasks, tmp_path, capsys
):
    client.force_login(people["manager"])
    items_before = study.items.count()
    assert client.get("/studies/demo/import/issues/").status_code == 200

    with run_tasks():
        response = client.post("/studies/demo/import/issues/", {"file": upload(dump(*BAD_LINES))})

    assert response.status_code == 302 and response.url == "/studies/demo/import/issues/"
    job = IssueImportJob.objects.get()
    assert (job.status, job.lines_total, job.lines_done, job.lines_accepted) == ("done", 5, 5, 2)
    assert (job.issues_created, job.items_added, job.errors_total) == (2, 2, 3)
    assert job.requested_by == people["manager"] and job.file_name == "issues.jsonl"
    assert not job.file  # the upload is not kept once imported
    assert study.items.count() == items_before + 2
    assert set(
        StudyItem.objects.filter(study=study, issue__repository__name="trainer").values_list(
            "issue__number", flat=True
        )
    ) == {1, 4}
    # The command's messages, line by line.
    path = tmp_path / "issues.jsonl"
    path.write_bytes(dump(*BAD_LINES))
    call_command("import_issues", str(path))
    command_lines = [
        line.split(":", 2)[1:] for line in capsys.readouterr().err.splitlines() if line
    ]
    assert [[str(number), f" {message}"] for number, message in job.errors] == command_lines
    assert [number for number, _ in job.errors] == [2, 3, 4]
    listing = html.unescape(client.get("/studies/demo/import/issues/jobs/").text)
    for number, message in job.errors:
        assert f"<td>{number}</td><td>{message}</td>" in listing
    assert "2 lines imported" in listing and "3 lines with errors" in listing


def test_the_api_answers_202_then_the_status_progress_and_errors(study, people, run_tasks):
    api = APIClient()
    api.force_login(people["manager"])

    with run_tasks():
        started = api.post(
            "/api/studies/demo/issue-imports/",
            {"file": upload(dump(*BAD_LINES, array=True), "issues.json")},
            format="multipart",
        )

    assert started.status_code == 202, started.json()
    job_id = started.json()["id"]
    followed = api.get(f"/api/studies/demo/issue-imports/{job_id}/").json()
    assert followed["status"] == "done" and followed["percent"] == 100
    assert (followed["lines_total"], followed["lines_done"], followed["lines_accepted"]) == (
        5,
        5,
        2,
    )
    assert [number for number, _ in followed["errors"]] == [2, 3, 4]
    assert "not a valid JSON" not in str(followed["errors"])  # an array's item, not a line
    listed = api.get("/api/studies/demo/issue-imports/").json()
    assert [job["id"] for job in listed] == [job_id]


def test_an_upload_renders_in_worker_processes_as_the_command_does(
    study, people, run_tasks, monkeypatch
):
    """The job renders with `import_workers` processes, as `import_issues` does; in the embedded
    default it runs in the web server's process, whose other threads make them start from a fork
    server. What they render is what rendering after storing gives."""
    monkeypatch.setattr(services, "BATCH_SIZE", 10)  # batches rendered ahead, by the processes
    monkeypatch.setattr("ingest.issue_uploads.import_workers", lambda: 2)
    bodies = [
        "Loss is **NaN** at step 3",
        "`KeyError: 'x'`\n\n```\nTraceback\n```",
        "<script>alert(1)</script> ok",
    ]
    lines = [issue(n, body=bodies[n % 3], id=70_000 + n) for n in range(1, 36)]
    for line in lines:
        line["comments_data"][0]["id"] += 70_000
    client = Client()
    client.force_login(people["manager"])
    items_before = study.items.count()

    with another_thread(), run_tasks():
        client.post("/studies/demo/import/issues/", {"file": upload(dump(*lines))})

    job = IssueImportJob.objects.get()
    assert (job.status, job.issues_created, job.items_added) == ("done", 35, 35)
    assert study.items.count() == items_before + 35
    imported = Issue.objects.filter(repository__name="trainer")
    rendered = sorted(imported.values_list("number", "body_html", "facets"))
    imported.update(body_html="", facets={})
    services.issue_texts_render(issue_ids=list(imported.values_list("id", flat=True)))
    assert sorted(imported.values_list("number", "body_html", "facets")) == rendered
    html_of = {number: body_html for number, body_html, _ in rendered}
    assert "<strong>NaN</strong>" in html_of[3] and "<script" not in html_of[2]


def test_a_queued_job_shows_its_progress_and_the_page_polls(client, study, people):
    """Without inline tasks the job waits for a worker: the list polls every 2 s until it ran."""
    client.force_login(people["manager"])
    job = issue_upload_start(
        study=study, user=people["manager"], stream=io.BytesIO(dump(*BAD_LINES)), size=10,
        filename="later.jsonl",
    )  # fmt: skip
    listing = client.get("/studies/demo/import/issues/jobs/").text
    assert 'hx-trigger="every 2s"' in listing and "Queued" in listing

    issue_upload_run(job_id=job.pk)

    listing = client.get("/studies/demo/import/issues/jobs/").text
    assert "every 2s" not in listing and "Done" in listing
    assert issue_upload_run(job_id=job.pk).lines_accepted == 2  # a second delivery: no change
    assert Issue.objects.filter(repository__name="trainer").count() == 2


def test_a_file_without_any_good_line_fails_in_the_commands_words(study, people, run_tasks):
    api = APIClient()
    api.force_login(people["manager"])
    content = b"\x00\x01garbage\n{not json\n"

    with run_tasks():
        started = api.post(
            "/api/studies/demo/issue-imports/", {"file": upload(content)}, format="multipart"
        )

    job = api.get(f"/api/studies/demo/issue-imports/{started.json()['id']}/").json()
    assert job["status"] == "failed" and job["error"] == "No issue could be imported."
    assert [number for number, _ in job["errors"]] == [1, 2]
    assert all(message.startswith("not valid JSON") for _, message in job["errors"])


def test_nul_characters_are_dropped_or_refused_as_the_command_does(study, people, run_tasks):
    client = Client()
    client.force_login(people["manager"])
    raw_nul = json.dumps(issue(5)).replace("Issue 5", "Issue\x005").encode()
    escaped_nul = json.dumps(issue(6, title="Issue\u00006")).encode()

    with run_tasks():
        client.post("/studies/demo/import/issues/", {"file": upload(raw_nul + b"\n" + escaped_nul)})

    job = IssueImportJob.objects.get()
    assert job.lines_accepted == 2 and not job.errors
    titles = set(Issue.objects.filter(number__in=[5, 6]).values_list("title", flat=True))
    assert titles == {"Issue5", "Issue6"}


def test_hostile_html_in_a_body_is_sanitised_when_rendered(client, study, people, run_tasks):
    hostile = (
        '<script>alert("x")</script><img src=x onerror="alert(1)">'
        '<a href="javascript:alert(2)">link</a>\n\n**bold**'
    )
    manager = Client()
    manager.force_login(people["manager"])
    with run_tasks():
        manager.post("/studies/demo/import/issues/", {"file": upload(dump(issue(7, body=hostile)))})

    item = StudyItem.objects.get(study=study, issue__number=7)
    assignment = Assignment.objects.filter(item=item).select_related("annotator").first()
    assert assignment is not None  # the study pre-assigns its new items
    client.force_login(assignment.annotator)
    page = client.get(f"/studies/demo/items/{item.id}/").text

    assert "<strong>bold</strong>" in page and "[image: image]" in page  # the body, rendered
    assert "<script>alert" not in page and "onerror" not in page
    assert "javascript:alert" not in page


def test_a_file_over_the_limit_is_refused_and_nothing_kept(client, study, people, settings):
    settings.ISSUE_UPLOAD_MAX_BYTES = 10
    client.force_login(people["manager"])
    page = client.post("/studies/demo/import/issues/", {"file": upload(dump(issue(1)))})
    assert page.status_code == 400 and "file is larger than 10 bytes" in page.text
    api = APIClient()
    api.force_login(people["manager"])
    answer = api.post(
        "/api/studies/demo/issue-imports/", {"file": upload(dump(issue(1)))}, format="multipart"
    )
    assert answer.status_code == 400
    assert "file is larger than 10 bytes" in str(answer.json()["error"]["details"])
    assert not IssueImportJob.objects.exists()


def test_a_closed_study_takes_no_dump(client, study, people):
    study_close(study=study, user=people["manager"], reason="done")
    client.force_login(people["manager"])
    page = client.post("/studies/demo/import/issues/", {"file": upload(dump(issue(1)))})
    assert page.status_code == 400 and "This study is closed" in page.text
    api = APIClient()
    api.force_login(people["manager"])
    answer = api.post(
        "/api/studies/demo/issue-imports/", {"file": upload(dump(issue(1)))}, format="multipart"
    )
    assert answer.status_code == 409 and answer.json()["error"]["code"] == "study_closed"
    assert not IssueImportJob.objects.exists()


@pytest.mark.parametrize("who", ["annotator1", "adjudicator", "outsider"])
def test_only_the_studys_managers_upload(study, people, who):
    client = Client()
    client.force_login(people[who])
    expected = 404 if who == "outsider" else 403
    assert client.get("/studies/demo/import/issues/").status_code == expected
    page = client.post("/studies/demo/import/issues/", {"file": upload(dump(issue(1)))})
    assert page.status_code == expected
    api = APIClient()
    api.force_login(people[who])
    answer = api.post(
        "/api/studies/demo/issue-imports/", {"file": upload(dump(issue(1)))}, format="multipart"
    )
    assert answer.status_code == expected
    assert not IssueImportJob.objects.exists()


def test_visitors_sign_in_first(study):
    assert Client().get("/studies/demo/import/issues/").url.startswith("/accounts/login/")
    assert APIClient().get("/api/studies/demo/issue-imports/").status_code == 401
    assert not IssueImportJob.objects.exists()


def test_the_form_needs_its_csrf_token(study, people):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(people["manager"])
    response = browser.post("/studies/demo/import/issues/", {"file": upload(dump(issue(1)))})
    assert response.status_code == 403 and not IssueImportJob.objects.exists()
    assert 'name="csrfmiddlewaretoken"' in browser.get("/studies/demo/import/issues/").text


def test_a_job_whose_worker_died_is_taken_over_by_the_next_delivery(study, people, settings):
    """Running, silent past the lease: the task delivered again starts it over; a job still
    within its lease is left to its worker."""
    job = issue_upload_start(
        study=study, user=people["manager"], stream=io.BytesIO(dump(issue(1), issue(2))), size=10,
        filename="died.jsonl",
    )  # fmt: skip
    IssueImportJob.objects.filter(pk=job.pk).update(status="running", heartbeat_at=timezone.now())
    assert issue_upload_run(job_id=job.pk).status == "running"  # its worker is alive

    stale = timezone.now() - timedelta(seconds=settings.INGEST_LEASE_SECONDS + 1)
    IssueImportJob.objects.filter(pk=job.pk).update(heartbeat_at=stale)
    taken_over = issue_upload_run(job_id=job.pk)

    assert (taken_over.status, taken_over.lines_accepted, taken_over.items_added) == ("done", 2, 2)
    assert not taken_over.file


def test_a_file_name_is_kept_without_nul(study, people):
    job = issue_upload_start(
        study=study, user=people["manager"], stream=io.BytesIO(b"[]"), size=2,
        filename="a\x00b.json",
    )  # fmt: skip
    assert job.file_name == "ab.json"


def test_beat_sends_again_the_lost_messages_and_workers(study, people, settings, inline_tasks):
    """A queued job not sent for INGEST_RESEND_SECONDS and a running one silent past its lease
    are sent again, and run; a fresh queued job waits for its own message."""

    def start(name: str) -> IssueImportJob:
        return issue_upload_start(
            study=study, user=people["manager"], stream=io.BytesIO(dump(issue(len(name)))),
            size=10, filename=name,
        )  # fmt: skip

    lost_message, lost_worker, fresh = start("a.jsonl"), start("bb.jsonl"), start("ccc.jsonl")
    now = timezone.now()
    IssueImportJob.objects.filter(pk=lost_message.pk).update(
        heartbeat_at=now - timedelta(seconds=settings.INGEST_RESEND_SECONDS + 1)
    )
    IssueImportJob.objects.filter(pk=lost_worker.pk).update(
        status="running", heartbeat_at=now - timedelta(seconds=settings.INGEST_LEASE_SECONDS + 1)
    )

    assert recover_issue_imports.apply().get() == 2

    statuses = dict(IssueImportJob.objects.values_list("id", "status"))
    assert statuses == {lost_message.pk: "done", lost_worker.pk: "done", fresh.pk: "queued"}
    assert recover_issue_imports.apply().get() == 0


def test_beat_schedules_the_recovery_on_the_ingest_queue(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["recover-issue-imports"]
    assert entry["task"] == "ingest.tasks.recover_issue_imports"
    assert entry["options"]["queue"] == settings.INGEST_QUEUE


def test_a_dump_whose_request_rolled_back_is_swept_once_an_hour_old(
    study, people, settings, tmp_path, inline_tasks
):
    """The file is kept before its job's row commits: a request that fails after the upload
    leaves a file no job holds. The hourly sweep deletes it once no request can still commit
    it; a job's own file stays."""
    settings.MEDIA_ROOT = str(tmp_path)

    def start(name: str) -> IssueImportJob:
        return issue_upload_start(
            study=study, user=people["manager"], stream=io.BytesIO(dump(issue(1))), size=10,
            filename=name,
        )  # fmt: skip

    with pytest.raises(RuntimeError), transaction.atomic():
        start("rolled-back.jsonl")
        raise RuntimeError("the request fails after the upload")
    kept = start("kept.jsonl")
    files = {path.name for path in (tmp_path / UPLOAD_FOLDER).iterdir()}
    (orphan,) = files - {kept.file.name.rsplit("/", 1)[1]}

    assert sweep_issue_upload_files.apply().get() == 0  # it may be a request's still under way
    later = timezone.now() + ORPHAN_AGE + timedelta(minutes=1)
    assert issue_upload_files_sweep(now=later) == [f"{UPLOAD_FOLDER}/{orphan}"]
    assert not (tmp_path / UPLOAD_FOLDER / orphan).exists()
    assert (tmp_path / kept.file.name).exists()
    assert issue_upload_run(job_id=kept.pk).status == "done"


def test_beat_sweeps_the_dumps_on_the_ingest_queue(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["sweep-issue-upload-files"]
    assert entry["task"] == "ingest.tasks.sweep_issue_upload_files"
    assert entry["options"]["queue"] == settings.INGEST_QUEUE
