"""Bad input and abuse around sources: follows of other studies stay hidden, a repository that
does not exist leaves no source behind, sources can be removed, and an unreachable GitHub ends
"Sync now" as a failed run instead of an error page."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from accounts.services import api_token_create
from corpus.models import Issue, Repository
from ingest.dispatch import sync_request
from ingest.follows import study_follow_create
from ingest.models import Source, StudyFollow, SyncRun
from ingest.sources import source_create
from labeling.services.studies import study_create


@pytest.fixture
def users(people, make_user, study):
    return {**people, "superuser": make_user("root", is_superuser=True, is_staff=True)}


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.fixture
def followed(users, study, make_user):
    """A source followed by "demo" (managed by "manager") and by a secret study of another
    manager."""
    other_manager = make_user("other-manager")
    secret = study_create(
        slug="secret-study",
        name="Secret Study Name",
        codebook_version=study.codebook_version,
        managers=[other_manager],
    )
    source = source_create(repository="microsoft/DeepSpeed")
    study_follow_create(source=source, study=study, created_by=users["manager"])
    study_follow_create(source=source, study=secret, created_by=other_manager)
    return source


# ----------------------------------------------------------------------------- item 10


def test_the_api_shows_only_the_follows_of_studies_the_user_may_see(users, followed):
    manager = api_as(users["manager"])

    detail = manager.get(f"/api/sources/{followed.pk}/").json()
    listed = manager.get("/api/sources/").json()["results"]

    assert [follow["study"] for follow in detail["follows"]] == ["demo"]
    assert [follow["study"] for follow in listed[0]["follows"]] == ["demo"]
    every = api_as(users["superuser"]).get(f"/api/sources/{followed.pk}/").json()
    assert sorted(follow["study"] for follow in every["follows"]) == ["demo", "secret-study"]


def test_the_sources_page_shows_only_the_follows_of_studies_the_user_may_see(users, followed):
    client = Client()
    client.force_login(users["manager"])

    page = client.get("/sources/").content.decode()

    assert "Demo" in page
    assert "Secret Study Name" not in page
    client.force_login(users["superuser"])
    assert "Secret Study Name" in client.get("/sources/").content.decode()


# ----------------------------------------------------------------------------- item 15


def test_sync_github_leaves_no_source_for_a_repository_that_does_not_exist(github, db):
    with pytest.raises(CommandError, match=r"Not Found.*not kept"):
        call_command("sync_github", "nobody/nothing", "--now", stdout=StringIO())

    assert not Source.objects.exists()
    assert not SyncRun.objects.exists()


def test_sync_github_keeps_a_source_it_did_not_create(github, db):
    source = source_create(repository="nobody/nothing")

    with pytest.raises(CommandError, match="Not Found"):
        call_command("sync_github", "nobody/nothing", "--now", stdout=StringIO())

    assert list(Source.objects.all()) == [source]


def test_a_manager_deletes_a_source_with_its_runs_but_not_its_issues(
    users, followed, sample_issues
):
    sync_request(source=followed, enqueue=False)
    stored = Issue.objects.filter(repository=followed.repository).count()
    assert stored

    annotator = api_as(users["annotator1"]).delete(f"/api/sources/{followed.pk}/")
    response = api_as(users["manager"]).delete(f"/api/sources/{followed.pk}/")

    assert annotator.status_code == 403
    assert response.status_code == 204, response.content
    assert not Source.objects.exists()
    assert not SyncRun.objects.exists() and not StudyFollow.objects.exists()
    assert Issue.objects.filter(repository=followed.repository).count() == stored
    assert Repository.objects.filter(pk=followed.repository_id).exists()
    assert api_as(users["manager"]).get(f"/api/sources/{followed.pk}/").status_code == 404


def test_a_source_is_not_deleted_under_a_running_sync(users, db):
    source = source_create(repository="acme/trainer")
    run = sync_request(source=source, enqueue=False)
    SyncRun.objects.filter(pk=run.pk).update(
        status=SyncRun.Status.RUNNING, lease_expires_at=timezone.now() + timedelta(minutes=5)
    )

    response = api_as(users["manager"]).delete(f"/api/sources/{source.pk}/")

    assert response.status_code == 409
    assert response.json()["error"]["code"] == "conflict"
    assert Source.objects.filter(pk=source.pk).exists()


def test_the_sources_page_removes_a_source_and_keeps_its_issues(users, followed, sample_issues):
    stored = Issue.objects.filter(repository=followed.repository).count()
    annotator, manager = Client(), Client()
    annotator.force_login(users["annotator1"])
    manager.force_login(users["manager"])
    form = {"action": "remove", "source": followed.pk}

    assert annotator.post("/sources/", form).status_code == 403
    response = manager.post("/sources/", form, follow=True)

    assert response.status_code == 200
    assert "its issues stay in the corpus" in response.content.decode()
    assert not Source.objects.exists()
    assert Issue.objects.filter(repository=followed.repository).count() == stored
    assert manager.post("/sources/", form).status_code == 404


# ----------------------------------------------------------------------------- item 4c


@pytest.mark.django_db(transaction=True)
def test_sync_now_inline_with_github_unreachable_ends_as_a_failed_run(
    settings, inline_tasks, make_user
):
    """The embedded default: tasks run inline in the request's on_commit hook (forced here, so
    that the test means the same with a broker configured, as in CI)."""
    settings.GITHUB_API_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    settings.GITHUB_TOKEN = ""
    source = source_create(repository="acme/trainer")
    client = Client()
    client.force_login(make_user("root", is_superuser=True, is_staff=True))

    response = client.post("/sources/", {"action": "sync", "source": source.pk})

    assert response.status_code == 302
    run = SyncRun.objects.get()
    assert run.status == SyncRun.Status.FAILED
    assert "GitHub could not be reached" in run.error
    assert client.get("/sources/").status_code == 200
