"""Every list of the API paginates with the one pagination (page, page_size up to 200), and a
filter value it cannot read, or one the study does not have, is a 400 naming the parameter."""

import pytest
from rest_framework.test import APIClient

from labeling.services.setup import study_member_join
from labeling.services.studies import item_next_for_annotator


@pytest.fixture
def manager(people, study):
    client = APIClient()
    client.force_login(people["manager"])
    return client


@pytest.mark.parametrize(
    ("url", "parameter"),
    [
        ("/api/issues/?is_pull_request=maybe", "is_pull_request"),
        ("/api/issues/?state=bogus", "state"),
        ("/api/assignments/?status=bogus", "status"),
        ("/api/sync-runs/?status=bogus", "status"),
        ("/api/sync-runs/?source=abc", "source"),
        ("/api/tokens/?active=perhaps", "active"),
        ("/api/studies/demo/queue/?status=finished", "status"),
        ("/api/studies/demo/disagreements/?dimension=no_such_dimension", "dimension"),
        ("/api/studies/demo/disagreements/?round=No+such+round", "round"),
        ("/api/studies/demo/disagreements/?repository=nobody/nothing", "repository"),
    ],
)
def test_unreadable_or_unknown_filter_values_are_a_400_naming_them(manager, url, parameter):
    response = manager.get(url)
    assert response.status_code == 400
    assert parameter in response.json()["error"]["details"]


def test_known_filter_values_still_filter(manager, study):
    issues = manager.get("/api/issues/?is_pull_request=false&page_size=200").json()["results"]
    assert len(issues) == 45
    assert manager.get("/api/issues/?is_pull_request=true").json()["results"] == []
    assert manager.get("/api/studies/demo/disagreements/?dimension=root_cause").status_code == 200
    assert manager.get("/api/studies/demo/disagreements/?round=Main").status_code == 200


# The lists that grow with the corpus or a study (api.pagination.UncountedPagination).
UNCOUNTED = ("/api/issues/", "/api/assignments/", "/api/studies/demo/queue/")


@pytest.mark.parametrize(
    "url",
    [
        "/api/codebooks/",
        "/api/codebook-versions/",
        "/api/issues/",
        "/api/studies/",
        "/api/assignments/",
        "/api/sources/",
        "/api/sync-runs/",
        "/api/tokens/",
        "/api/studies/demo/members/",
        "/api/studies/demo/queue/",
        "/api/studies/demo/disagreements/",
    ],
)
def test_every_list_is_paginated_and_caps_page_size(manager, people, study, url):
    study_member_join(study=study, user=people["manager"], role="annotator")
    item_next_for_annotator(study=study, user=people["manager"])
    body = manager.get(f"{url}?page_size=1000").json()
    assert {"next", "previous", "results"} <= set(body)
    # The lists that grow with the corpus have no count (api.pagination.UncountedPagination).
    assert ("count" in body) is (url not in UNCOUNTED)
    assert len(body["results"]) <= 200
    one = manager.get(f"{url}?page_size=1").json()
    assert len(one["results"]) <= 1
    assert (one["next"] is not None) is (len(body["results"]) > 1)
    if one["next"] is not None:
        second = manager.get(one["next"]).json()
        assert second["results"] == body["results"][1:2]
        assert second["previous"] is not None
