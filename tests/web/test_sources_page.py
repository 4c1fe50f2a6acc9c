"""The Sources page as a researcher meets it: "Sync now" in the embedded default shows the run it
finished, the recent syncs name who started each run, and a repository GitHub does not have is
refused when it is added (on the page and over the API alike)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.services import api_token_create
from corpus.models import Repository
from ingest.models import Source, SyncRun
from ingest.sources import source_create
from tests.github_server import FakeGitHub

SAMPLE_PATH = Path(__file__).resolve().parents[2] / "corpus" / "data" / "sample-issues.jsonl"
UNKNOWN = "microsoft/DeepSpeeed"  # one letter too many


@pytest.fixture
def github(settings) -> Iterator[FakeGitHub]:
    """The stand-in GitHub with the bundled sample's repositories, the settings pointing at it."""
    with FakeGitHub() as server:
        server.load_jsonl(SAMPLE_PATH)
        settings.GITHUB_API_URL = server.base_url
        settings.GITHUB_TOKEN = ""
        yield server


@pytest.fixture
def root(make_user):
    return make_user("root", is_superuser=True, is_staff=True)


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def api_as(user) -> APIClient:
    _, key = api_token_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


# ----------------------------------------------------------------------------- Sync now


@pytest.mark.django_db(transaction=True)
def test_sync_now_inline_shows_the_finished_run_and_lists_it(github, inline_tasks, root):
    source = source_create(repository="microsoft/DeepSpeed")
    client = signed_in(root)

    response = client.post(
        "/sources/", {"action": "sync", "source": source.pk}, HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    html = response.content.decode()
    run = SyncRun.objects.get()
    assert run.status == SyncRun.Status.DONE
    fragment, _, recent = html.partition('id="recent-syncs"')
    assert "Done" in fragment and "Queued" not in fragment
    assert "hx-trigger" not in fragment  # nothing left to poll
    assert f'id="sync-run-{source.pk}"' in fragment
    # The recent syncs come along out of band, with the run in them.
    assert 'hx-swap-oob="true"' in recent and "No sync yet" not in recent
    assert re.search(rf"<td>{run.pk}</td>\s*<td>microsoft/DeepSpeed</td>\s*<td>Done", recent)


@pytest.mark.django_db(transaction=True)
def test_sync_now_without_htmx_comes_back_to_the_finished_run(github, inline_tasks, root):
    source = source_create(repository="microsoft/DeepSpeed")

    page = signed_in(root).post("/sources/", {"action": "sync", "source": source.pk}, follow=True)

    html = page.content.decode()
    assert "Done" in html and "No sync yet" not in html
    assert SyncRun.objects.get().status == SyncRun.Status.DONE


def test_a_poll_that_finds_the_run_ended_brings_the_recent_syncs(root, db):
    source = source_create(repository="acme/trainer")
    run = SyncRun.objects.create(source=source, status=SyncRun.Status.RUNNING, progress=0.5)
    client = signed_in(root)

    running = client.get(f"/sources/?run={run.pk}", HTTP_HX_REQUEST="true").content.decode()
    SyncRun.objects.filter(pk=run.pk).update(status=SyncRun.Status.DONE, progress=1.0)
    ended = client.get(f"/sources/?run={run.pk}", HTTP_HX_REQUEST="true").content.decode()

    assert "recent-syncs" not in running  # no table rebuilt every two seconds
    assert 'id="recent-syncs" hx-swap-oob="true"' in ended


# ----------------------------------------------------------------------------- adding a source


def test_the_page_refuses_a_repository_github_does_not_have(github, root):
    response = signed_in(root).post(
        "/sources/",
        {"action": "create", "repository": UNKNOWN, "state": "closed", "interval_minutes": 60},
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert f"GitHub has no repository {UNKNOWN}" in html
    assert f'value="{UNKNOWN}"' in html  # the form keeps what was typed
    assert not Source.objects.exists() and not Repository.objects.exists()


def test_the_api_refuses_a_repository_github_does_not_have(github, root):
    response = api_as(root).post("/api/sources/", {"repository": UNKNOWN}, format="json")

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert error["message"].startswith(f"GitHub has no repository {UNKNOWN}")
    assert "repository" in error["details"]
    assert not Source.objects.exists() and not Repository.objects.exists()


def test_a_repository_github_has_is_added_after_one_request(github, root):
    github.reset_log()

    page = signed_in(root).post(
        "/sources/",
        {
            "action": "create",
            "repository": "NVIDIA/Megatron-LM",
            "state": "closed",
            "interval_minutes": 60,
        },
        follow=True,
    )
    api = api_as(root).post("/api/sources/", {"repository": "huggingface/transformers"})

    assert (
        page.status_code == 200 and "Added the source NVIDIA/Megatron-LM" in page.content.decode()
    )
    assert api.status_code == 201
    assert github.paths_requested() == [
        "/repos/NVIDIA/Megatron-LM",
        "/repos/huggingface/transformers",
    ]
    assert Source.objects.count() == 2


def test_a_bad_option_or_a_duplicate_costs_no_request(github, root):
    source_create(repository="microsoft/DeepSpeed")
    github.reset_log()
    client = api_as(root)

    bad = client.post("/api/sources/", {"repository": UNKNOWN, "interval_minutes": 0})
    twice = client.post("/api/sources/", {"repository": "microsoft/DeepSpeed"})

    assert bad.status_code == twice.status_code == 400
    # The serializer refuses the bound before the service runs: the field is named in details.
    assert "interval_minutes" in bad.json()["error"]["details"]
    assert "already" in twice.json()["error"]["message"]
    assert github.paths_requested() == []


def test_with_github_unreachable_the_source_is_added_with_a_warning(settings, root):
    settings.GITHUB_API_URL = "http://127.0.0.1:9"  # nothing listens on the discard port
    settings.GITHUB_TOKEN = ""

    page = signed_in(root).post(
        "/sources/",
        {
            "action": "create",
            "repository": "acme/trainer",
            "state": "closed",
            "interval_minutes": 60,
        },
        follow=True,
    )

    html = page.content.decode()
    assert "Added the source acme/trainer" in html
    assert "GitHub could not be asked whether acme/trainer exists" in html
    assert Source.objects.count() == 1


# ----------------------------------------------------------------------------- started by


def test_recent_syncs_name_the_person_who_pressed_sync_now(github, people, study, make_user):
    source = source_create(repository="microsoft/DeepSpeed")
    SyncRun.objects.create(
        source=source, status=SyncRun.Status.DONE, trigger=SyncRun.Trigger.SCHEDULE
    )
    SyncRun.objects.filter(status=SyncRun.Status.DONE).update(queued_at="2024-01-01T00:00:00Z")
    client = signed_in(people["manager"])

    client.post("/sources/", {"action": "sync", "source": source.pk})
    html = client.get("/sources/").content.decode()

    recent = html[html.index('id="recent-syncs"') :]
    started_by = re.findall(r"</td>\s*<td>([^<]*)</td>\s*<td>\d{4}-\d\d-\d\d", recent)
    assert started_by == ["manager", "schedule"]
    run = api_as(people["manager"]).get("/api/sync-runs/").json()["results"][0]
    assert run["requested_by"] == "manager" and run["trigger"] == "manual"
