import pytest
from rest_framework.test import APIClient

from accounts.services import api_token_create


@pytest.fixture
def api(people):
    def as_user(name: str) -> APIClient:
        client = APIClient()
        _, key = api_token_create(user=people[name], name="test")
        client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        return client

    return as_user


def test_members_see_their_studies_outsiders_do_not(api, study):
    assert [s["slug"] for s in api("annotator1").get("/api/studies/").json()["results"]] == ["demo"]
    assert api("outsider").get("/api/studies/").json()["results"] == []
    response = api("outsider").get("/api/studies/demo/")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_issues_follow_membership(api, study):
    def listed(user: str) -> int:
        return len(api(user).get("/api/issues/?page_size=200").json()["results"])

    assert listed("manager") == 45
    assert listed("outsider") == 0
    assert listed("annotator1") == 45  # k = n = 2


def test_the_issue_lists_rows_are_the_serializers_output_of_each_issue(api, study, sample_issues):
    """The list builds its rows from plain values (api.serializers.issue_rows): each row is
    what IssueSerializer, over the model, gives; the detail route says the same."""
    from api.serializers import IssueSerializer
    from corpus.models import Issue

    pull = sample_issues[3]
    Issue.objects.filter(pk=pull.pk).update(
        is_pull_request=True, labels=["bug", "good first issue", 7], closed_at=None
    )
    rows = api("manager").get("/api/issues/?page_size=200").json()["results"]
    assert len(rows) == 45
    models = Issue.objects.select_related("repository").in_bulk([row["id"] for row in rows])
    for row in rows:
        assert row == IssueSerializer(models[row["id"]]).data
    shown = next(row for row in rows if row["id"] == pull.pk)
    assert shown["html_url"].endswith(f"/pull/{pull.number}")
    assert shown["labels"] == ["bug", "good first issue", "7"] and shown["closed_at"] is None
    detail = api("manager").get(f"/api/issues/{pull.pk}/").json()
    assert {key: detail[key] for key in shown} == shown


def test_issue_detail_has_thread_and_sanitised_html(api, study, sample_issues):
    issue = next(i for i in sample_issues if i.comments_count)
    detail = api("manager").get(f"/api/issues/{issue.id}/").json()
    assert detail["repository"] == issue.repository.full_name
    assert len(detail["comments"]) == issue.comments.count()
    assert "<script" not in detail["body_html"]


def test_codebooks_are_readable_with_their_tree(api, study, codebook_version):
    codebooks = api("annotator1").get("/api/codebooks/").json()["results"]
    assert codebooks[0]["name"] == "llm-training-issues-starter"
    version = api("annotator1").get(f"/api/codebook-versions/{codebook_version.id}/").json()
    assert len(version["dimensions"]) == 9
    assert sum(len(d["categories"]) for d in version["dimensions"]) == 102


def test_schema_and_docs_are_served(api, study):
    client = api("annotator1")
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200  # from the installed package: tests/api/test_schema.py


def test_token_or_session_is_needed(study):
    response = APIClient().get("/api/studies/")
    assert response.status_code in (401, 403)
    assert response.json()["error"]["code"] == "not_authenticated"
