"""The interfaces over the sync: the API (a permission matrix and the one error shape), the
`sync_github` command and the Sources page."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from accounts.services import api_token_create
from corpus.models import Issue
from ingest.dispatch import sync_request
from ingest.models import Source, StudyFollow, SyncRun
from ingest.sources import source_create
from labeling.services.studies import study_create

PASSWORD = "a-long-test-password"


@pytest.fixture
def users(people, make_user, study):
    """Everyone of the matrix; `study` makes "manager" a manager and "annotator1" an annotator."""
    return {**people, "superuser": make_user("root", is_superuser=True, is_staff=True)}


@pytest.fixture
def api(users):
    def as_user(name: str | None) -> APIClient:
        client = APIClient()
        if name is not None:
            _, key = api_token_create(user=users[name], name="test")
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return as_user


# ----------------------------------------------------------------------------- API


ALLOWED = {"manager", "superuser"}
ROLES = ["outsider", "annotator1", "adjudicator", "manager", "superuser"]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("endpoint", ["list", "create", "sync", "run", "runs"])
def test_source_endpoints_permission_matrix(api, users, github, role, endpoint):
    github.add_repository("acme", "other")
    source = source_create(repository="acme/trainer")
    run = sync_request(source=source, enqueue=False)
    client = api(role)
    calls = {
        "list": lambda: client.get("/api/sources/"),
        "create": lambda: client.post(
            "/api/sources/", {"repository": "acme/other", "labels": ["bug"]}, format="json"
        ),
        "sync": lambda: client.post(f"/api/sources/{source.pk}/sync/"),
        "run": lambda: client.get(f"/api/sync-runs/{run.pk}/"),
        "runs": lambda: client.get("/api/sync-runs/"),
    }

    response = calls[endpoint]()

    if role in ALLOWED:
        assert response.status_code in (200, 201, 202), response.content
    else:
        assert response.status_code == 403
        assert response.json()["error"]["code"] == "permission_denied"


def test_anonymous_callers_are_asked_to_authenticate(api, users):
    response = api(None).get("/api/sources/")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"


def test_create_list_and_sync_a_source(api, users, github):
    github.add_repository("microsoft", "DeepSpeed")
    client = api("manager")

    created = client.post(
        "/api/sources/",
        {
            "repository": "microsoft/DeepSpeed",
            "labels": ["bug", "training"],
            "since": "2024-01-01T00:00:00Z",
            "interval_minutes": 30,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["repository"] == "microsoft/DeepSpeed"
    assert body["labels"] == ["bug", "training"] and body["latest_run"] is None
    assert Source.objects.get().created_by == users["manager"]

    first = client.post(f"/api/sources/{body['id']}/sync/")
    second = client.post(f"/api/sources/{body['id']}/sync/")
    assert first.status_code == second.status_code == 202
    assert first.json()["id"] == second.json()["id"]
    assert first.json()["status"] == "queued" and first.json()["task_id"]

    listed = client.get("/api/sources/").json()["results"]
    assert listed[0]["latest_run"]["id"] == first.json()["id"]
    run = client.get(f"/api/sync-runs/{first.json()['id']}/").json()
    assert run["repository"] == "microsoft/DeepSpeed" and run["trigger"] == "manual"
    assert SyncRun.objects.get().requested_by == users["manager"]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"repository": "not-a-repository"}, "OWNER/NAME"),
        # The bounds are the schema's too, so the serializer refuses it, naming the field.
        ({"repository": "acme/trainer", "interval_minutes": 0}, "not valid"),
        ({"repository": "acme/trainer", "labels": ["a,b"]}, "comma"),
        ({"repository": "acme/trainer", "since": "2999-01-01T00:00:00Z"}, "future"),
        ({"repository": "acme/trainer", "labels": "bug"}, "not valid"),
        ({"repository": "acme/trainer", "state": "merged"}, "not valid"),
        ({"repository": "acme/trainer", "since": "yesterday"}, "not valid"),
    ],
)
def test_invalid_sources_get_the_one_error_shape(api, users, payload, message):
    response = api("manager").post("/api/sources/", payload, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    # The service names the problem in its message; a bound the serializer checks first (the
    # interval) is named in the details.
    assert error["code"] == "invalid"
    assert message in error["message"] or message in str(error["details"])
    assert set(error) == {"code", "message", "details"}
    assert not Source.objects.exists()


def test_a_duplicate_source_is_refused(api, users, github):
    github.add_repository("acme", "trainer")
    client = api("superuser")
    assert client.post("/api/sources/", {"repository": "acme/trainer"}).status_code == 201
    response = client.post("/api/sources/", {"repository": "ACME/Trainer"})
    assert response.status_code == 400
    assert "already" in response.json()["error"]["message"]


def test_a_manager_lets_their_study_follow_a_source(api, users, study, make_user):
    source = source_create(repository="microsoft/DeepSpeed")
    body = {"study": "demo", "labels": ["bug"], "requires_linked_fix": True}

    response = api("manager").post(f"/api/sources/{source.pk}/follows/", body, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["study"] == "demo"
    follow = StudyFollow.objects.get()
    assert follow.requires_linked_fix and follow.labels == ["bug"]
    detail = api("manager").get(f"/api/sources/{source.pk}/").json()
    assert [f["study"] for f in detail["follows"]] == ["demo"]


def test_only_the_studys_managers_may_make_it_follow_a_source(api, users, study, make_user):
    source = source_create(repository="microsoft/DeepSpeed")
    other_manager = make_user("other-manager")
    study_create(
        slug="other",
        name="Other",
        codebook_version=study.codebook_version,
        managers=[other_manager, users["adjudicator"]],
    )

    def follow_as(user) -> dict:
        _, key = api_token_create(user=user, name="test")
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        response = client.post(f"/api/sources/{source.pk}/follows/", {"study": "demo"})
        return {"status": response.status_code, **response.json()}

    # Not a member of the study: it is not found; a member but not its manager: refused.
    assert follow_as(other_manager)["status"] == 404
    refused = follow_as(users["adjudicator"])
    assert refused["status"] == 403 and refused["error"]["code"] == "permission_denied"
    assert not StudyFollow.objects.exists()


def test_the_schema_describes_the_source_endpoints(api, users):
    schema = api("manager").get("/api/schema/", HTTP_ACCEPT="application/json").json()
    assert "/api/sources/{id}/sync/" in schema["paths"]
    assert "/api/sync-runs/{id}/" in schema["paths"]


# ----------------------------------------------------------------------------- the command


def test_sync_github_now_runs_here(sample_github, db):
    out = StringIO()

    call_command("sync_github", "microsoft/DeepSpeed", "--state", "closed", "--now", stdout=out)

    text = out.getvalue()
    assert "Added the source microsoft/DeepSpeed (closed)" in text
    assert "done. 18 issues seen: 15 created" in text
    run = SyncRun.objects.get()
    assert run.status == "done" and run.trigger == "command"
    assert Issue.objects.filter(repository__name="DeepSpeed").count() == 15

    call_command("sync_github", "microsoft/DeepSpeed", "--now", stdout=out)
    assert Source.objects.count() == 1 and SyncRun.objects.count() == 2


def test_sync_github_queues_a_task_and_prints_its_id(github, db):
    out = StringIO()

    call_command(
        "sync_github",
        "acme/trainer",
        "--label",
        "bug",
        "--label",
        "training",
        "--since",
        "2024-01-01",
        stdout=out,
    )

    run = SyncRun.objects.get()
    assert re.search(rf"Queued sync run {run.pk} of .*: Celery task {run.task_id}$", out.getvalue())
    source = run.source
    assert source.labels == ["bug", "training"]
    assert source.since.isoformat() == "2024-01-01T00:00:00+00:00"


def test_sync_github_reports_bad_input(db):
    with pytest.raises(CommandError, match="OWNER/NAME"):
        call_command("sync_github", "nonsense", "--now")


def test_sync_github_reports_a_failed_sync(github, db):
    with pytest.raises(CommandError, match="Not Found"):
        call_command("sync_github", "nobody/nothing", "--now", stdout=StringIO())


# ----------------------------------------------------------------------------- the page


@pytest.fixture
def browser(users):
    def log_in(name: str, **options) -> Client:
        client = Client(**options)
        if name == "superuser":
            client.force_login(users[name])
        else:
            assert client.login(username=name, password=PASSWORD)
        return client

    return log_in


def test_a_manager_sees_sources_with_the_progress_of_their_latest_run(browser, users):
    source = source_create(repository="microsoft/DeepSpeed", labels=["bug"])
    run = sync_request(source=source, enqueue=False)
    SyncRun.objects.filter(pk=run.pk).update(
        status="running", progress=0.42, counts={"seen": 40, "created": 30}
    )

    page = browser("manager").get("/sources/")

    assert page.status_code == 200
    html = page.content.decode()
    assert "microsoft/DeepSpeed" in html and "bug" in html
    assert 'role="progressbar"' in html and 'aria-valuenow="42"' in html
    assert f'hx-get="/sources/?run={run.pk}"' in html and 'hx-trigger="every 2s"' in html
    assert 'aria-label="Sync microsoft/DeepSpeed now"' in html

    fragment = browser("manager").get(f"/sources/?run={run.pk}", HTTP_HX_REQUEST="true")
    assert fragment.status_code == 200
    assert "<html" not in fragment.content.decode()
    assert "42%" in fragment.content.decode()

    SyncRun.objects.filter(pk=run.pk).update(status="done", progress=1.0)
    finished = browser("manager").get(f"/sources/?run={run.pk}", HTTP_HX_REQUEST="true")
    assert "hx-trigger" not in finished.content.decode()  # polling stops
    assert 'aria-valuenow="100"' in finished.content.decode()


@pytest.mark.parametrize("role", ["annotator1", "adjudicator", "outsider"])
def test_the_sources_page_is_only_for_managers(browser, users, role):
    client = browser(role)
    assert client.get("/sources/").status_code == 403
    assert client.post("/sources/", {"action": "create", "repository": "a/b"}).status_code == 403


def test_the_sources_page_needs_a_login(db):
    response = Client().get("/sources/")
    assert response.status_code == 302 and "/accounts/login/" in response.url


def test_sync_now_on_the_page_starts_one_run(browser, users):
    source = source_create(repository="acme/trainer")
    client = browser("manager", enforce_csrf_checks=True)
    page = client.get("/sources/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)

    refused = client.post("/sources/", {"action": "sync", "source": source.pk})
    assert refused.status_code == 403  # no CSRF token
    form = {"action": "sync", "source": source.pk, "csrfmiddlewaretoken": token}
    first = client.post("/sources/", form, HTTP_HX_REQUEST="true")
    second = client.post("/sources/", form, HTTP_HX_REQUEST="true")

    assert first.status_code == second.status_code == 200
    assert f'id="sync-run-{source.pk}"' in first.content.decode()
    assert "Queued" in first.content.decode()
    assert SyncRun.objects.count() == 1
    assert SyncRun.objects.get().requested_by == users["manager"]


def test_adding_a_source_on_the_page(browser, users, github):
    github.add_repository("NVIDIA", "Megatron-LM")
    client = browser("superuser")

    added = client.post(
        "/sources/",
        {
            "action": "create",
            "repository": "NVIDIA/Megatron-LM",
            "state": "closed",
            "labels": "bug, training",
            "interval_minutes": 30,
            "since": "2024-01-01T00:00",
        },
    )
    refused = client.post(
        "/sources/",
        {"action": "create", "repository": "no", "state": "closed", "interval_minutes": 30},
    )

    assert added.status_code == 302
    source = Source.objects.get()
    assert source.labels == ["bug", "training"] and source.interval_minutes == 30
    assert source.since.isoformat() == "2024-01-01T00:00:00+00:00"
    assert refused.status_code == 400 and "OWNER/NAME" in refused.content.decode()


def test_the_page_makes_the_same_number_of_queries_for_many_sources(
    browser, users, django_assert_max_num_queries
):
    def add(count: int) -> None:
        for index in range(count):
            source = source_create(repository=f"acme/repo-{Source.objects.count()}-{index}")
            for _ in range(3):
                run = sync_request(source=source, enqueue=False)
                SyncRun.objects.filter(pk=run.pk).update(status="done")

    client = browser("manager")
    add(1)
    with django_assert_max_num_queries(12) as few:
        assert client.get("/sources/").status_code == 200
    add(9)
    with django_assert_max_num_queries(len(few.captured_queries)):
        assert client.get("/sources/").status_code == 200
