"""Bad input to the agreement report and the API's lists: an unknown filter value is a 400 (a
CommandError) naming it, not an empty report; bootstrap resamples are capped; `page_size` is
honoured up to its cap; issue search and label filters filter."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from corpus.models import Issue
from labeling.agreement_report import MAX_BOOTSTRAP


@pytest.fixture
def api(people, study):
    client = APIClient()
    client.force_authenticate(people["manager"])
    return client


@pytest.fixture
def page(people, study):
    client = Client()
    client.force_login(people["manager"])
    return client


def error_fields(response) -> set[str]:
    return set(response.json()["error"]["details"])


# ----------------------------------------------------------------------------- unknown filters


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("round=Nope", "round"),
        ("repository=foo/bar", "repository"),
        ("dimension=nope", "dimension"),
        ("dimension=root_cause&dimension=nope", "dimension"),
    ],
)
def test_the_api_refuses_unknown_filter_values(api, query, parameter):
    response = api.get(f"/api/studies/demo/agreement/?{query}")

    assert response.status_code == 400, response.content
    assert response.json()["error"]["code"] == "invalid"
    assert error_fields(response) == {parameter}


def test_the_api_takes_known_filter_values(api, study):
    repository = study.items.select_related("issue__repository").first().issue.repository
    query = f"round=Main&repository={repository.full_name}&dimension=root_cause"

    response = api.get(f"/api/studies/demo/agreement/?{query}")

    assert response.status_code == 200, response.content
    assert list(response.json()["dimensions"]) == ["root_cause"]


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("round=Nope", "round"),
        ("repository=foo/bar", "repository"),
        ("dimension=nope", "dimension"),
    ],
)
def test_the_page_refuses_unknown_filter_values(page, query, parameter):
    response = page.get(f"/studies/demo/agreement/?{query}")

    assert response.status_code == 400
    assert f"{parameter}: " in response.content.decode()


def test_the_page_takes_known_filter_values(page):
    assert page.get("/studies/demo/agreement/?round=Main").status_code == 200
    assert page.get("/studies/demo/agreement/").status_code == 200


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--round", "Nope"], "Unknown round: Nope"),
        (["--repository", "foo/bar"], "Unknown repository: foo/bar"),
        (["--dimension", "nope"], "Unknown dimension: nope"),
    ],
)
def test_the_command_refuses_unknown_filter_values(study, options, message):
    with pytest.raises(CommandError, match=message):
        call_command("agreement", "--study", "demo", *options, stdout=StringIO())


# ----------------------------------------------------------------------------- bootstrap cap


def test_the_api_caps_bootstrap_resamples(api):
    over = api.get(f"/api/studies/demo/agreement/?bootstrap={MAX_BOOTSTRAP + 1}")
    far_over = api.get("/api/studies/demo/agreement/?bootstrap=10000")
    at_cap = api.get(f"/api/studies/demo/agreement/?bootstrap={MAX_BOOTSTRAP}")

    assert over.status_code == far_over.status_code == 400
    assert error_fields(over) == error_fields(far_over) == {"bootstrap"}
    assert at_cap.status_code == 200


def test_the_page_caps_bootstrap_resamples(page):
    over = page.get(f"/studies/demo/agreement/?intervals=on&bootstrap={MAX_BOOTSTRAP + 1}")
    at_cap = page.get(f"/studies/demo/agreement/?intervals=on&bootstrap={MAX_BOOTSTRAP}")

    assert over.status_code == 400 and "bootstrap: " in over.content.decode()
    assert at_cap.status_code == 200


def test_the_command_caps_bootstrap_resamples(study):
    with pytest.raises(CommandError, match="--bootstrap"):
        call_command(
            "agreement", "--study", "demo", "--bootstrap", str(MAX_BOOTSTRAP + 1), stdout=StringIO()
        )
    call_command(
        "agreement", "--study", "demo", "--bootstrap", str(MAX_BOOTSTRAP), stdout=StringIO()
    )


# ----------------------------------------------------------------------------- lists


def test_page_size_is_honoured_up_to_its_cap(api, sample_issues):
    assert len(sample_issues) > 3

    small = api.get("/api/issues/?page_size=3").json()
    default = api.get("/api/issues/").json()
    huge = api.get("/api/issues/?page_size=100000").json()

    assert len(small["results"]) == 3 and "count" not in small and small["next"]
    assert len(default["results"]) == min(50, len(sample_issues))
    assert len(huge["results"]) == min(200, len(sample_issues))


def test_issue_search_and_labels_filter(api, study):
    visible = list(Issue.objects.filter(study_items__study=study).distinct())
    labeled = next(issue for issue in visible if issue.labels)
    label = str(labeled.labels[0])
    word = max(labeled.title.split(), key=len)

    by_label = api.get("/api/issues/", {"labels": label.upper(), "page_size": 200}).json()
    by_word = api.get("/api/issues/", {"search": word, "page_size": 200}).json()

    expected_by_label = {
        issue.pk for issue in visible if label.lower() in {str(x).lower() for x in issue.labels}
    }
    expected_by_word = {
        issue.pk
        for issue in visible
        if word.lower() in issue.title.lower() or word.lower() in (issue.body or "").lower()
    }
    assert {row["id"] for row in by_label["results"]} == expected_by_label
    assert {row["id"] for row in by_word["results"]} == expected_by_word
    assert 0 < len(expected_by_label) < len(visible)
    assert 0 < len(expected_by_word) < len(visible)
