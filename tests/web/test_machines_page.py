"""The machine annotators page of a study, as a manager meets it: add a language model (the
stand-in endpoint), run it, follow its progress, read its record, resume a run that stopped;
and who may not."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import Client

from machines.models import MachineAnnotator, MachineLabel, MachineRun
from machines.runs import machine_run_execute
from machines.services import machine_annotator_get_or_create, machine_run_request
from tests.openai_server import FakeOpenAI

N_ITEMS = 45
URL = "/studies/demo/machines/"


@pytest.fixture
def endpoint(settings) -> Iterator[FakeOpenAI]:
    settings.MACHINES_BACKOFF_SECONDS = 0.01
    settings.MACHINES_MAX_WAIT_SECONDS = 0.2
    # Nothing here times out on purpose: a busy machine must not turn a slow answer into a
    # retry, which the request counts below would take for a fault.
    settings.MACHINES_REQUEST_TIMEOUT = 30.0
    settings.MACHINES_MAX_ATTEMPTS = 2
    with FakeOpenAI() as stand_in:
        yield stand_in


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _add(client: Client, endpoint: FakeOpenAI, **fields) -> object:
    data = {
        "action": "add",
        "name": "",
        "base_url": endpoint.base_url,
        "model": "stand-in",
        "api_key_env": "",
        "temperature": "0",
        "seed": "7",
        "samples": "1",
        **fields,
    }
    return client.post(URL, data)


def test_the_study_page_leads_managers_to_the_machines(study, people):
    page = signed_in(people["manager"]).get("/studies/demo/").content.decode()
    assert f'href="{URL}"' in page
    annotator_page = signed_in(people["annotator1"]).get("/studies/demo/").content.decode()
    assert URL not in annotator_page


def test_a_manager_adds_a_model_runs_it_and_reads_its_record(
    study, people, endpoint, inline_tasks, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setenv("STAND_IN_KEY", "sk-test-secret-123")
    client = signed_in(people["manager"])
    assert client.get(URL).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = _add(client, endpoint, api_key_env="STAND_IN_KEY", name="stand-in-t0")
    run = MachineRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"/studies/demo/machines/runs/{run.pk}/"
    assert run.status == MachineRun.Status.FINISHED and run.items_done == N_ITEMS
    # The key went to the endpoint from the environment; it is stored nowhere.
    assert endpoint.last_authorization == "Bearer sk-test-secret-123"
    annotator = MachineAnnotator.objects.get()
    assert annotator.api_key_env == "STAND_IN_KEY" and annotator.created_by == people["manager"]
    assert "sk-test-secret" not in str(MachineAnnotator.objects.values().get())

    record = client.get(response["Location"]).content.decode()
    host = endpoint.base_url.split("/")[2]
    for fact in (host, run.prompt_hash, "stand-in", "seed = 7", "temperature = 0.0", "Finished"):
        assert fact in record
    assert "Prompt template" in record and "BEGIN SCHEMA" in record
    assert f"{N_ITEMS} of {N_ITEMS} items" in record
    assert "hx-trigger" not in record  # no polling once the run has ended
    assert "sk-test-secret" not in record

    listing = client.get(URL).content.decode()
    assert "stand-in-t0" in listing and f"Run {run.pk}" in listing and "STAND_IN_KEY" in listing


def test_the_form_refuses_a_key_where_its_variable_name_goes(study, people, endpoint):
    response = _add(signed_in(people["manager"]), endpoint, api_key_env="sk-abc123")
    assert response.status_code == 400
    assert "never the key itself" in response.content.decode()
    assert not MachineAnnotator.objects.exists()


def test_a_name_taken_with_other_settings_is_refused_on_the_form(study, people, endpoint):
    machine_annotator_get_or_create(study=study, base_url=endpoint.base_url, model="stand-in")
    response = _add(signed_in(people["manager"]), endpoint, temperature="1.0")
    assert response.status_code == 400
    assert "is taken by an annotator with other settings" in response.content.decode()


def test_progress_is_polled_while_the_run_is_queued_and_ends_with_a_refresh(
    study, people, endpoint
):
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in"
    )
    run = machine_run_request(annotator=annotator, enqueue=False)
    client = signed_in(people["manager"])
    url = f"/studies/demo/machines/runs/{run.pk}/"
    page = client.get(url).content.decode()
    assert f'hx-get="{url}?progress=1"' in page and 'hx-trigger="every 2s"' in page

    fragment = client.get(url + "?progress=1", headers={"HX-Request": "true"})
    assert fragment.status_code == 200 and "HX-Refresh" not in fragment
    assert "Queued" in fragment.content.decode()

    machine_run_execute(run_id=run.pk)
    fragment = client.get(url + "?progress=1", headers={"HX-Request": "true"})
    text = fragment.content.decode()
    assert fragment["HX-Refresh"] == "true"
    assert "hx-trigger" not in text and f"{N_ITEMS} of {N_ITEMS} items" in text
    assert f"{N_ITEMS} requests" in text and "tokens in" in text


def test_a_failed_run_is_resumed_from_where_it_stopped(
    study, people, endpoint, inline_tasks, django_capture_on_commit_callbacks
):
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in"
    )
    # One item refused: the run finishes with one failure, which a resume tries again.
    refused = {"first": None}

    def refuse_once(user_message: str) -> str | None:
        if refused["first"] is None:
            refused["first"] = user_message
        return "refusal" if user_message == refused["first"] else None

    endpoint.fault_for = refuse_once
    run = machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)
    assert (run.status, run.items_done, run.items_failed) == ("finished", N_ITEMS - 1, 1)
    client = signed_in(people["manager"])
    page = client.get(f"/studies/demo/machines/runs/{run.pk}/").content.decode()
    assert "Resume run" in page and "The model refused" in page

    endpoint.fault_for = None
    before = endpoint.request_count
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"action": "resume", "run": run.pk})
    assert response.status_code == 302
    run.refresh_from_db()
    assert (run.status, run.items_done, run.items_failed, run.item_errors) == (
        "finished",
        N_ITEMS,
        0,
        [],
    )
    assert endpoint.request_count - before == 1  # only the item that failed
    assert MachineLabel.objects.filter(run=run).values("item").distinct().count() == N_ITEMS
    # A run that ended cleanly is not resumed again.
    response = client.post(URL, {"action": "resume", "run": run.pk}, follow=True)
    assert "only a failed or interrupted run" in response.content.decode()


def test_other_kinds_are_listed_too(study, people):
    MachineAnnotator.objects.create(study=study, name="tfidf", kind="classical")
    page = signed_in(people["manager"]).get(URL).content.decode()
    assert "tfidf" in page and "Classical model trained on gold labels" in page
    assert 'aria-label="Start a run of tfidf"' not in page


@pytest.mark.parametrize(
    ("who", "status"),
    [("annotator1", 403), ("adjudicator", 403), ("outsider", 404)],
)
def test_only_managers_see_and_use_the_page(study, people, endpoint, who, status):
    client = signed_in(people[who])
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in"
    )
    run = machine_run_request(annotator=annotator, enqueue=False)
    assert client.get(URL).status_code == status
    assert client.get(f"/studies/demo/machines/runs/{run.pk}/").status_code == status
    assert _add(client, endpoint).status_code == status
    assert client.post(URL, {"action": "run", "annotator": annotator.pk}).status_code == status
    assert MachineRun.objects.count() == 1


def test_posts_need_the_csrf_token(study, people, endpoint):
    client = Client(enforce_csrf_checks=True)
    client.force_login(people["manager"])
    assert _add(client, endpoint).status_code == 403
    assert not MachineAnnotator.objects.exists()


def test_another_studys_run_is_not_found_under_this_slug(study, people, endpoint):
    client = signed_in(people["manager"])
    assert client.get("/studies/demo/machines/runs/999999/").status_code == 404
    assert client.post(URL, {"action": "resume", "run": "999999"}).status_code == 404
    assert client.post(URL, {"action": "run", "annotator": "x"}).status_code == 404


def test_a_manager_runs_the_scikit_learn_annotator_from_the_page(
    study, people, inline_tasks, django_capture_on_commit_callbacks
):
    client = signed_in(people["manager"])
    page = client.get(URL).content.decode()
    assert page.count("Train on the gold labels and run") == 1
    title = page[page.index("<title>") : page.index("</title>")]
    assert "Machine annotators" in title and "<" not in title.removeprefix("<title>")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(URL, {"action": "classical"})

    run = MachineRun.objects.get(annotator__study=study)
    assert response.status_code == 302 and response.url.endswith(f"/machines/runs/{run.pk}/")
    assert run.annotator.kind == MachineAnnotator.Kind.CLASSICAL
    # The demo study has no gold label yet: the run fails, saying why, and stores nothing.
    assert run.status == MachineRun.Status.FAILED and "gold" in run.error
    assert not MachineLabel.objects.filter(run=run).exists()
    assert "gold" in client.get(response.url).content.decode()
