"""A skip, from the labeling page or the API, reads the annotator's assignment once, with its row
lock, as a save does: the service writes it without reading it again."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from labeling.models import Assignment

# A statement that reads assignments as its main table, as the ORM writes it.
ASSIGNMENT_READ = re.compile(r'^SELECT .* FROM "labeling_assignment"', re.DOTALL)


def _assignment_reads(queries: CaptureQueriesContext) -> int:
    return sum(bool(ASSIGNMENT_READ.match(query["sql"])) for query in queries.captured_queries)


@pytest.fixture
def claimed(study, people) -> tuple[APIClient, Assignment]:
    api = APIClient()
    api.force_authenticate(people["annotator1"])
    claimed = api.post("/api/studies/demo/next/").json()
    return api, Assignment.objects.select_related("item").get(pk=claimed["id"])


def test_a_skip_from_the_page_reads_the_assignment_once(claimed, client, people):
    _, assignment = claimed
    client.force_login(people["annotator1"])
    with CaptureQueriesContext(connection) as queries:
        response = client.post(
            f"/studies/demo/items/{assignment.item_id}/",
            {"action": "skip", "skip_reason": "not a bug report"},
        )
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.status == "skipped" and assignment.skip_reason == "not a bug report"
    assert _assignment_reads(queries) == 1


def test_a_skip_from_the_api_reads_the_assignment_once_and_answers_it(claimed):
    api, assignment = claimed
    with CaptureQueriesContext(connection) as queries:
        response = api.post(
            f"/api/assignments/{assignment.pk}/skip/", {"reason": "duplicate"}, format="json"
        )
    assert response.status_code == 200
    assert response.json()["status"] == "skipped"
    # The locked read, then the answer's read of the assignment as it now is.
    assert _assignment_reads(queries) == 2


def test_a_refused_skip_changes_nothing(claimed, client, people):
    _, assignment = claimed
    client.force_login(people["annotator1"])
    response = client.post(
        f"/studies/demo/items/{assignment.item_id}/", {"action": "skip", "skip_reason": "  "}
    )
    assert response.status_code == 400
    assert "Say why you skip this item." in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.status == "todo" and assignment.version == 0
