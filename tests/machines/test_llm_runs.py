"""An LLM annotator over the demo study (45 issues) against the stand-in endpoint: what a run
records, the cache, resuming, and that no fault of the endpoint loses a finished item or stores
half an answer."""

import json
import threading

import pytest
from django.core.management import CommandError, call_command

from machines.models import MachineLabel, MachineResponse, MachineRun
from machines.prompts import sha256_of
from machines.runs import machine_run_execute
from machines.services import machine_annotator_get_or_create, machine_run_request

N_ITEMS = 45


def _run(study, endpoint, **settings):
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model=settings.pop("model", "stand-in"), **settings
    )
    return machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)


def _labeled_items(run) -> set[int]:
    return set(MachineLabel.objects.filter(run=run).values_list("item_id", flat=True))


def _issue_marker(item) -> str:
    """How the user message names an item's issue."""
    return f"{item.issue.repository.owner}/{item.issue.repository.name}#{item.issue.number} "


def test_a_run_labels_every_item_and_records_how(study, endpoint):
    run = _run(study, endpoint, temperature=0.0, seed=7)

    assert run.status == MachineRun.Status.FINISHED
    assert (run.items_total, run.items_done, run.items_failed) == (N_ITEMS, N_ITEMS, 0)
    assert run.requests == N_ITEMS == endpoint.request_count
    assert run.tokens_in > 0 and run.tokens_out > 0
    assert run.prompt_hash == sha256_of(run.prompt_template)
    assert run.endpoint_host == endpoint.base_url.split("/")[2]
    assert run.parameters["model"] == "stand-in" and run.parameters["seed"] == 7
    assert run.parameters["response_format"] == "json_schema"
    assert run.parameters["models_answering"] == ["stand-in"]
    assert run.started_at <= run.finished_at

    # The prompt carries the pinned codebook and asks for JSON of a schema derived from it.
    body = endpoint.requests[0][0]
    system = body["messages"][0]["content"]
    assert "Screening rule: answer only when screening is one of: include." in system
    assert "Definition:" in system and "Exclude:" in system
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["root_cause"]["properties"]["categories"]["maxItems"] == 1
    assert "maxItems" not in schema["properties"]["debugging_practice"]["properties"]["categories"]
    assert body["seed"] == 7 and body["temperature"] == 0.0

    # Every item has its screening label; the other dimensions only where the machine's own
    # screening let them apply, as people's ratings.
    labels = MachineLabel.objects.filter(run=run).select_related("dimension")
    screening = {
        label.item_id: label.categories for label in labels if label.dimension.key == "screening"
    }
    assert len(screening) == N_ITEMS
    for label in labels:
        if label.dimension.key == "root_cause":
            assert screening[label.item_id] == ["include"]
        assert label.confidence == 1.0 and label.rationale
        assert len(label.raw_response["responses"]) == 1
    screened_in = [item for item, keys in screening.items() if keys == ["include"]]
    assert len({label.item_id for label in labels if label.dimension.key == "symptom"}) == len(
        screened_in
    )


def test_a_rerun_pays_nothing(study, endpoint):
    first = _run(study, endpoint)
    again = _run(study, endpoint)
    assert (again.items_done, again.items_skipped, again.requests) == (0, N_ITEMS, 0)
    # Another annotator with the same model and parameters: its answers come from the cache.
    other = _run(study, endpoint, name="same settings, another name")
    assert (other.items_done, other.requests, other.cache_hits) == (N_ITEMS, 0, N_ITEMS)
    assert endpoint.request_count == N_ITEMS
    assert MachineResponse.objects.count() == N_ITEMS
    labels = lambda run: sorted(  # noqa: E731
        MachineLabel.objects.filter(run=run).values_list("item_id", "dimension_id", "categories")
    )
    assert labels(other) == labels(first)


def test_rate_limits_server_errors_and_timeouts_are_retried(study, endpoint, settings):
    # The client gives up after 2 s on the answer the stand-in holds for 4 s.
    settings.MACHINES_REQUEST_TIMEOUT = 2.0
    endpoint.timeout_seconds = 4.0
    endpoint.fail_next("429", times=2)
    endpoint.fail_next("500", times=2)
    endpoint.fail_next("timeout")
    run = _run(study, endpoint)
    assert run.status == MachineRun.Status.FINISHED
    assert (run.items_done, run.items_failed) == (N_ITEMS, 0)
    assert run.requests == N_ITEMS + 5
    assert len(_labeled_items(run)) == N_ITEMS


def test_bad_answers_fail_their_item_only_and_a_rerun_finishes_them(study, endpoint):
    items = list(study.items.select_related("issue__repository").order_by("id"))
    faults = [(3, "malformed"), (10, "schema"), (20, "refusal")]
    faulty = {_issue_marker(items[i]): fault for i, fault in faults}
    endpoint.fault_for = lambda user: next(
        (fault for marker, fault in faulty.items() if marker in user), None
    )
    run = _run(study, endpoint)

    assert run.status == MachineRun.Status.FINISHED
    assert (run.items_done, run.items_failed) == (N_ITEMS - 3, 3)
    failed = {items[3].id, items[10].id, items[20].id}
    assert not _labeled_items(run) & failed  # nothing of a bad answer is stored
    errors = {error["item"]: error["error"] for error in run.item_errors}
    assert errors.keys() == failed
    assert "not JSON" in errors[items[3].id]
    assert "does not match the schema" in errors[items[10].id]
    assert "refused" in errors[items[20].id]
    assert MachineResponse.objects.count() == N_ITEMS - 3  # only valid answers are cached

    endpoint.fault_for = None
    rerun = _run(study, endpoint)
    assert (rerun.items_done, rerun.items_skipped, rerun.requests) == (3, N_ITEMS - 3, 3)
    assert _labeled_items(rerun) == failed


def test_an_endpoint_that_keeps_failing_fails_the_item_not_the_run(study, endpoint, settings):
    settings.MACHINES_MAX_IN_FLIGHT = 1
    endpoint.fail_next("500", times=settings.MACHINES_MAX_ATTEMPTS)
    run = _run(study, endpoint)
    assert (run.items_done, run.items_failed) == (N_ITEMS - 1, 1)
    assert run.requests == N_ITEMS - 1 + settings.MACHINES_MAX_ATTEMPTS
    assert "500" in run.item_errors[0]["error"]


def test_a_refused_key_stops_the_run_and_keeps_the_finished_items(study, endpoint, settings):
    settings.MACHINES_MAX_IN_FLIGHT = 1
    seen = iter(range(1000))
    lock = threading.Lock()

    def after_five(user: str) -> str | None:
        with lock:
            return "401" if next(seen) >= 5 else None

    endpoint.fault_for = after_five
    run = _run(study, endpoint)
    assert run.status == MachineRun.Status.FAILED
    assert "401" in run.error
    assert run.items_done == 5
    assert len(_labeled_items(run)) == 5
    assert run.requests < 10  # it stopped asking


def test_samples_give_the_confidence_and_each_its_seed(study, endpoint, settings):
    settings.MACHINES_MAX_IN_FLIGHT = 1
    answers = iter(["include", "include", "not_a_bug"] * N_ITEMS)

    def choose(prompt, dimension, categories, multi_label):
        if dimension == "screening":
            return [next(answers)]
        return categories[:1]

    endpoint.choose = choose
    run = _run(study, endpoint, samples=3, seed=100, temperature=0.7)
    assert run.requests == 3 * N_ITEMS
    assert [body["seed"] for body, _, _ in endpoint.requests[:3]] == [100, 101, 102]
    screening = MachineLabel.objects.filter(run=run, dimension__key="screening")
    assert {(tuple(label.categories), round(label.confidence, 3)) for label in screening} == {
        (("include",), 0.667)
    }
    label = screening.first()
    assert [part["categories"] for part in label.raw_response["samples"]] == [
        ["include"],
        ["include"],
        ["not_a_bug"],
    ]
    assert len(label.raw_response["responses"]) == 3


def test_an_endpoint_without_json_schema_gets_the_schema_in_the_prompt(study, endpoint, settings):
    endpoint.json_schema_supported = False
    run = _run(study, endpoint)
    assert (run.items_done, run.items_failed) == (N_ITEMS, 0)
    assert run.parameters["response_format"] == "none"
    # The requests in flight when the first refusal came were refused too; then none.
    assert N_ITEMS < run.requests <= N_ITEMS + settings.MACHINES_MAX_IN_FLIGHT
    answered = [body for body, status, _ in endpoint.requests if status == 200]
    assert len(answered) == N_ITEMS
    assert all("response_format" not in body for body in answered)


def test_the_key_comes_from_the_named_environment_variable(study, endpoint, monkeypatch):
    monkeypatch.delenv("IC_STAND_IN_KEY", raising=False)
    run = _run(study, endpoint, api_key_env="IC_STAND_IN_KEY")
    assert run.status == MachineRun.Status.FAILED
    assert "IC_STAND_IN_KEY" in run.error and endpoint.request_count == 0

    key = "stand-in-" + "k" * 8
    monkeypatch.setenv("IC_STAND_IN_KEY", key)
    run = _run(study, endpoint, api_key_env="IC_STAND_IN_KEY")
    assert run.status == MachineRun.Status.FINISHED
    assert endpoint.last_authorization == f"Bearer {key}"
    assert key not in json.dumps(run.parameters) + run.prompt_template


def test_the_command_runs_and_prints_the_figures(study, endpoint):
    from io import StringIO

    out = StringIO()
    call_command(
        "annotate_with_model",
        "--study", "demo", "--base-url", endpoint.base_url, "--model", "stand-in",
        "--samples", "1", "--temperature", "0", "--seed", "3", "--now",
        stdout=out,
    )  # fmt: skip
    run = MachineRun.objects.get()
    text = out.getvalue()
    assert f"Machine run {run.pk} of stand-in on demo: finished." in text
    assert f"Items done {N_ITEMS}" in text and f"requests {N_ITEMS}" in text
    assert f"tokens in {run.tokens_in}, out {run.tokens_out}" in text


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--study", "nope"], "No study 'nope'"),
        (["--api-key-env", "sk-abc123"], "NAME of an environment variable"),
        (["--samples", "0"], "samples"),
        (["--temperature", "3"], "temperature"),
        (["--base-url", "ftp://x"], "base_url"),
    ],
)
def test_the_command_refuses_bad_input(study, arguments, message):
    base = {"--study": "demo", "--base-url": "http://127.0.0.1:9/v1", "--model": "m"}
    pairs = dict(zip(arguments[::2], arguments[1::2], strict=True))
    argv = [part for pair in {**base, **pairs}.items() for part in pair]
    with pytest.raises(CommandError, match=message):
        call_command("annotate_with_model", *argv, "--now")
    assert not MachineRun.objects.exists()


def test_one_name_stands_for_one_set_of_settings(study):
    machine_annotator_get_or_create(study=study, base_url="http://127.0.0.1:9/v1", model="m")
    with pytest.raises(CommandError, match="other settings"):
        call_command(
            "annotate_with_model", "--study", "demo", "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", "--temperature", "0.5", "--now",
        )  # fmt: skip
