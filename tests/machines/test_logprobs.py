"""Confidence from log-probabilities where the endpoint gives them: the probability the model
gave the categories it wrote (times the samples' agreement); from the samples' agreement alone
where it does not."""

import json

import pytest

from machines.models import MachineLabel
from machines.prompts import categories_probability, samples_consensus
from machines.runs import machine_run_execute
from machines.services import machine_annotator_get_or_create, machine_run_request


def _run(study, endpoint, **settings):
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in", **settings
    )
    return machine_run_execute(run_id=machine_run_request(annotator=annotator, enqueue=False).pk)


def _labels(run, key):
    return list(MachineLabel.objects.filter(run=run, dimension__key=key))


def test_confidence_comes_from_the_logprobs_when_the_endpoint_gives_them(study, endpoint):
    endpoint.category_probability = lambda dimension: 0.8 if dimension == "screening" else 1.0
    run = _run(study, endpoint)
    assert run.items_failed == 0 and run.parameters["logprobs"] is True
    assert all(body.get("logprobs") is True for body, _, _ in endpoint.requests)
    screening = _labels(run, "screening")
    assert {round(label.confidence, 6) for label in screening} == {0.8}
    assert {label.raw_response["confidence_from"] for label in screening} == {"logprobs"}


def test_with_samples_the_share_agreeing_weighs_the_probability(study, endpoint):
    endpoint.category_probability = lambda dimension: 0.5
    run = _run(study, endpoint, samples=2, temperature=0.7)
    # The stand-in answers a prompt the same way every time: both samples agree.
    assert {round(label.confidence, 6) for label in _labels(run, "screening")} == {0.5}


def test_an_endpoint_without_logprobs_falls_back_to_the_samples(study, endpoint):
    endpoint.logprobs_supported = False
    run = _run(study, endpoint)
    assert run.items_failed == 0 and run.parameters["logprobs"] is False
    # Refused once per request in flight at the time, then none asks again.
    refused = [body for body, status, _ in endpoint.requests if status == 400]
    assert 1 <= len(refused) <= 8 and run.requests == 45 + len(refused)
    assert all(body.get("logprobs") for body in refused)
    screening = _labels(run, "screening")
    assert {label.confidence for label in screening} == {1.0}
    assert {label.raw_response["confidence_from"] for label in screening} == {"samples"}


def test_categories_probability_reads_only_tokens_that_spell_the_answer():
    content = json.dumps({"d": {"categories": ["a", "b"], "rationale": "r"}})
    tokens = [
        {"token": '{"d": {"categories": [', "logprob": 0.0},
        {"token": '"a"', "logprob": -0.5},
        {"token": ', "b"', "logprob": -0.5},
        {"token": '], "rationale": "r"}}', "logprob": 0.0},
    ]
    response = {"choices": [{"message": {"content": content}, "logprobs": {"content": tokens}}]}
    assert categories_probability(response, "d") == pytest.approx(0.36787944)
    assert categories_probability(response, "other") is None
    tokens[1]["token"] = '"x"'
    assert categories_probability(response, "d") is None
    assert categories_probability({"choices": [{"message": {"content": content}}]}, "d") is None
    # Without probabilities for every sample of the majority: the samples' share.
    answers = [{"d": {"categories": ["a"], "rationale": ""}}] * 2
    assert samples_consensus(answers, "d", [0.9, None]).confidence == 1.0
    assert samples_consensus(answers, "d", [0.9, 0.7]).confidence == pytest.approx(0.8)
