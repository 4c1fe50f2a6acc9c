"""The disagreement queue refuses a filter value the study does not have with a 400 that says
which, as the agreement page and the API do, instead of an empty queue passed off as "no open
disagreements"."""

import pytest

from tests.conftest import PASSWORD

URL = "/studies/demo/disagreements/"


@pytest.fixture
def adjudicator(client, study):
    assert client.login(username="adjudicator", password=PASSWORD)
    return client


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ({"dimension": "zzz"}, "dimension: &#x27;zzz&#x27; is not a dimension of this study."),
        ({"round": "Round 9"}, "round: &#x27;Round 9&#x27; is not a round of this study."),
        (
            {"repository": "acme/nothing"},
            "repository: &#x27;acme/nothing&#x27; has no issue in this study.",
        ),
    ],
)
def test_an_unknown_filter_is_a_400_that_names_it(adjudicator, query, message):
    response = adjudicator.get(URL, query)

    assert response.status_code == 400
    html = response.content.decode()
    assert message in html
    # The filters are shown cleared, not holding the unknown value.
    value = next(iter(query.values()))
    assert f'value="{value}"' not in html and "matching the filters" not in html


def test_the_page_and_the_api_agree(adjudicator):
    page = adjudicator.get(URL, {"dimension": "zzz"})
    api = adjudicator.get("/api/studies/demo/disagreements/", {"dimension": "zzz"})

    assert page.status_code == api.status_code == 400
    assert api.json()["error"]["details"]["dimension"] == [
        "'zzz' is not a dimension of this study."
    ]


def test_known_filters_still_answer_200(adjudicator):
    response = adjudicator.get(URL, {"dimension": "root_cause", "round": "", "repository": ""})
    assert response.status_code == 200
