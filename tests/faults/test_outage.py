"""A request while the database cannot be reached is a 503 with Retry-After (the API's error
shape under /api/, a short page elsewhere), nothing of it is committed, and the next request
after the database is back succeeds."""

import pytest
from django.db import connection

from labeling.models import Annotation, Assignment
from tests.conftest import SCREENED_IN, require_postgres
from tests.faults.servers import free_port

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def database_down():
    """Point the default connection at a port nobody listens on, as a database that is
    restarting looks to a web process; put it back afterwards."""
    require_postgres()

    def down() -> None:
        connection.close()
        connection.settings_dict["PORT"] = str(free_port())

    original = connection.settings_dict["PORT"]

    def up() -> None:
        connection.close()
        connection.settings_dict["PORT"] = original

    yield down, up
    up()


def test_an_api_request_during_an_outage_is_a_503_in_the_error_shape_and_recovers(
    client, study, people, database_down
):
    down, up = database_down
    client.force_login(people["annotator1"])
    assignment = client.post(f"/api/studies/{study.slug}/next/").json()
    answers = {name: {"categories": values} for name, values in SCREENED_IN.items()}
    body = {"version": assignment["version"], "seconds_spent": 5, "answers": answers}
    submit = f"/api/assignments/{assignment['id']}/submit/"

    down()
    response = client.post(submit, body, content_type="application/json")

    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.json()["error"]["code"] == "service_unavailable"
    assert set(response.json()["error"]) == {"code", "message", "details"}
    up()
    assert Assignment.objects.get(pk=assignment["id"]).status != "submitted"
    assert not Annotation.objects.filter(assignment_id=assignment["id"]).exists()
    again = client.post(submit, body, content_type="application/json")
    assert again.status_code == 200, again.content
    assert Assignment.objects.get(pk=assignment["id"]).status == "submitted"
    assert Annotation.objects.filter(assignment_id=assignment["id"]).count() == len(SCREENED_IN)


def test_a_page_during_an_outage_is_a_short_503_page(client, study, people, database_down):
    down, up = database_down
    client.force_login(people["annotator1"])
    assert client.get("/").status_code == 200

    down()
    response = client.get("/")

    assert response.status_code == 503 and response["Retry-After"] == "5"
    assert response["Content-Type"].startswith("text/html")
    assert b"try again" in response.content
    up()
    assert client.get("/").status_code == 200
