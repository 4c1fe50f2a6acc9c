"""Every action of the pages has an API counterpart.

PAGES maps each named route of web/urls.py to the API operations that do what the page does
(read what it shows, carry out its forms' actions). A page route missing from the table fails,
and so does an API operation in the table that the schema does not have, unless it is listed in
EXPECTED_MISSING (work in progress elsewhere, accepted whether it exists yet or not).

Below the table: the routes added for parity (overview, queue, the item to label), checked
against what their pages show.
"""

import pytest
from django.urls import URLPattern, URLResolver
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from labeling.models import Assignment
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.setup import study_member_join
from labeling.services.studies import item_next_for_annotator
from tests.conftest import SCREENED_IN
from web import urls as web_urls

ITEM = "/api/studies/{slug}/items/{item_id}"
PAGES: dict[str, list[str]] = {
    # My studies, a study's overview and dashboard.
    "home": ["GET /api/studies/"],
    "study_overview": [
        "GET /api/studies/{slug}/",
        "GET /api/studies/{slug}/overview/",
        "GET /api/studies/{slug}/dashboard/",
    ],
    # Setting a study up: the form's choices, its live count, creating it.
    "study_new": ["GET /api/codebook-versions/", "POST /api/studies/"],
    "study_new_preview": ["POST /api/studies/preview/"],
    "study_members": [
        "GET /api/studies/{slug}/members/",
        "POST /api/studies/{slug}/members/",
        "DELETE /api/studies/{slug}/members/{username}/{role}/",
        "POST /api/studies/{slug}/members/{username}/reassign/",
        "GET /api/studies/{slug}/dashboard/",  # the annotators' progress on the page
    ],
    # Labeling.
    "queue": ["GET /api/studies/{slug}/queue/"],
    "next_item": ["POST /api/studies/{slug}/next/"],
    "label_item": [
        f"GET {ITEM}/labeling/",
        "POST /api/assignments/{id}/draft/",
        "POST /api/assignments/{id}/submit/",
        "POST /api/assignments/{id}/skip/",
        f"GET {ITEM}/resolution/",  # the gold labels and discussion once submitted
    ],
    "label_item_autosave": ["POST /api/assignments/{id}/draft/"],
    # Agreement and resolution.
    "agreement": ["GET /api/studies/{slug}/agreement/"],
    "disagreements": ["GET /api/studies/{slug}/disagreements/"],
    "item_resolve": [
        f"GET {ITEM}/resolution/",
        f"POST {ITEM}/resolutions/",
        f"POST {ITEM}/tiebreaker/",
    ],
    "item_discussion": [f"GET {ITEM}/discussion/", f"POST {ITEM}/discussion/"],
    "item_upstream_review": [f"POST {ITEM}/upstream-review/"],
    # Paper tables (the report page).
    "report": ["GET /api/studies/{slug}/tables/", "GET /api/studies/{slug}/tables/{table_id}/"],
    # Dataset export.
    "study_export": ["GET /api/studies/{slug}/exports/", "POST /api/studies/{slug}/exports/"],
    "study_export_jobs": ["GET /api/studies/{slug}/exports/", "GET /api/exports/{id}/"],
    "export_job_download": ["GET /api/exports/{id}/download/"],
    "study_export_download": ["GET /api/studies/{slug}/dataset/"],
    # Codebooks, their editor and a study's move to a new version.
    "codebooks": ["GET /api/codebooks/"],
    "codebook_version": ["GET /api/codebook-versions/{id}/"],
    "codebook_draft_new": ["POST /api/codebook-versions/{id}/drafts/"],
    "codebook_edit": [
        "POST /api/codebook-versions/{id}/category/",
        "POST /api/codebook-versions/{id}/dimension/",
        "POST /api/codebook-versions/{id}/merge/",
        "POST /api/codebook-versions/{id}/split/",
        "POST /api/codebook-versions/{id}/remove/",
        "POST /api/codebook-versions/{id}/publish/",
    ],
    "codebook_export": ["GET /api/codebook-versions/{id}/export/"],
    "codebook_diff": ["GET /api/codebook-versions/{id}/diff/"],
    "study_codebook": ["POST /api/studies/{slug}/codebook-migrate/"],
    "study_proposals": [
        "GET /api/studies/{slug}/proposals/",
        "POST /api/studies/{slug}/proposals/decide/",
    ],
    "study_recheck": ["GET /api/studies/{slug}/recheck/"],
    # Sources: list, add, sync now, remove, a run's progress.
    "sources": [
        "GET /api/sources/",
        "POST /api/sources/",
        "POST /api/sources/{id}/sync/",
        "DELETE /api/sources/{id}/",
        "GET /api/sync-runs/{id}/",
    ],
    # Machine annotators (docs/machines.md).
    "study_machines": [
        "GET /api/studies/{slug}/machines/",
        "POST /api/studies/{slug}/machines/",
        "POST /api/studies/{slug}/machines/classical/",
        "PUT /api/studies/{slug}/machines/rater/",
    ],
    "machine_run": [
        "GET /api/studies/{slug}/machines/runs/{run_id}/",
        "POST /api/studies/{slug}/machines/runs/{run_id}/resume/",
    ],
    "study_export_machines": [
        "GET /api/studies/{slug}/machines/export/",
        "GET /api/studies/{slug}/machines/",
    ],
    # A study's life (docs/study-life.md): closing, the activity log, the pilot gate,
    # invitations, one's account, uploads.
    "study_status_change": [
        "POST /api/studies/{slug}/close/",
        "POST /api/studies/{slug}/reopen/",
    ],
    "study_activity": ["GET /api/studies/{slug}/activity/"],
    "study_activity_download": ["GET /api/studies/{slug}/activity/"],
    "study_rounds": [
        "GET /api/studies/{slug}/rounds/",
        "POST /api/studies/{slug}/rounds/{round_id}/targets/",
        "POST /api/studies/{slug}/rounds/{round_id}/open/",
    ],
    "study_invitations": [
        "GET /api/studies/{slug}/invitations/",
        "POST /api/studies/{slug}/invitations/",
        "DELETE /api/studies/{slug}/invitations/{invitation_id}/",
        "GET /api/studies/{slug}/members/",
    ],
    "invitation_open": ["POST /api/invitations/accept/", "POST /api/invitations/join/"],
    "account": ["GET /api/account/", "PATCH /api/account/"],
    "study_import": ["POST /api/studies/{slug}/annotation-import/"],
    "codebook_import": ["POST /api/codebooks/import/"],
    "study_restore": ["POST /api/studies/restore/"],
    "study_issue_import": [
        "GET /api/studies/{slug}/issue-imports/",
        "POST /api/studies/{slug}/issue-imports/",
    ],
    "study_issue_import_jobs": [
        "GET /api/studies/{slug}/issue-imports/",
        "GET /api/studies/{slug}/issue-imports/{id}/",
    ],
    # The account's API tokens.
    "account_tokens": ["GET /api/tokens/", "POST /api/tokens/", "DELETE /api/tokens/{id}/"],
}

# Operations of pages being built alongside (the export, report and codebook editor work): the
# table names them, and they are accepted while they do not exist yet.
EXPECTED_MISSING: set[str] = set()


def _page_routes(patterns, prefix: str = "") -> dict[str, str]:
    routes = {}
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            routes |= _page_routes(pattern.url_patterns, prefix + str(pattern.pattern))
        elif isinstance(pattern, URLPattern) and pattern.name:
            routes[pattern.name] = "/" + prefix + str(pattern.pattern)
    return routes


def _api_operations() -> set[str]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return {
        f"{method.upper()} {path}"
        for path, methods in schema["paths"].items()
        for method in methods
    }


def test_every_page_route_has_api_counterparts_in_the_table():
    routes = _page_routes(web_urls.urlpatterns)
    missing = sorted(f"{name} ({path})" for name, path in routes.items() if name not in PAGES)
    assert missing == [], "page routes without an API counterpart in PAGES"


def test_the_tables_api_operations_exist():
    operations = _api_operations()
    routes = _page_routes(web_urls.urlpatterns)
    absent = sorted(
        f"{page}: {operation}"
        for page, wanted in PAGES.items()
        if page in routes  # a page of work not merged yet names operations not merged yet
        for operation in wanted
        if operation not in operations and operation not in EXPECTED_MISSING
    )
    assert absent == []


def test_the_table_names_no_page_twice_and_no_operation_badly():
    for operations in PAGES.values():
        assert len(operations) == len(set(operations))
        for operation in operations:
            method, path = operation.split(" ")
            assert method in {"GET", "POST", "PUT", "PATCH", "DELETE"}
            assert path.startswith("/api/") and path.endswith("/")


# The routes added for parity.


@pytest.fixture
def api(people):
    def as_user(name: str) -> APIClient:
        client = APIClient()
        client.force_login(people[name])
        return client

    return as_user


def test_overview_gives_roles_counts_and_own_progress(api, study, people):
    mine = item_next_for_annotator(study=study, user=people["annotator1"])
    answers = {key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()}
    assignment_save(assignment=mine, user=people["annotator1"], answers=answers, submit=True)

    annotator = api("annotator1").get("/api/studies/demo/overview/").json()
    assert annotator["roles"] == ["annotator"]
    assert annotator["study"]["slug"] == "demo"
    assert annotator["counts"]["items"] == study.items.count()
    assert annotator["progress"]["done"] == 1
    assert (
        annotator["progress"]["total"]
        == Assignment.objects.filter(item__study=study, annotator=people["annotator1"]).count()
    )

    manager = api("manager").get("/api/studies/demo/overview/").json()
    assert manager["roles"] == ["manager"] and manager["progress"] is None
    assert api("outsider").get("/api/studies/demo/overview/").status_code == 404


def test_queue_lists_only_my_own_assignments_with_the_pages_filters(api, study, people):
    manager = people["manager"]
    study_member_join(study=study, user=manager, role="annotator")
    claimed = item_next_for_annotator(study=study, user=manager)

    body = api("manager").get("/api/studies/demo/queue/").json()
    assert {row["annotator"] for row in body["results"]} == {"manager"}
    assert len(body["results"]) == body["progress"]["total"] >= 1
    assert claimed.pk in {row["id"] for row in body["results"]}

    annotator1 = api("annotator1").get("/api/studies/demo/queue/?status=todo&page_size=5").json()
    assert {row["annotator"] for row in annotator1["results"]} == {"annotator1"}
    assert {row["status"] for row in annotator1["results"]} == {"todo"}
    assert len(annotator1["results"]) == 5
    assert api("annotator1").get("/api/studies/demo/queue/?status=done").json()["results"] == []

    refused = api("annotator1").get("/api/studies/demo/queue/?status=finished")
    assert refused.status_code == 400
    assert "status" in refused.json()["error"]["details"]
    # A member who labels nothing has an empty queue, not an error.
    assert api("adjudicator").get("/api/studies/demo/queue/").json()["results"] == []


def test_labeling_item_gives_the_issue_and_the_studys_dimensions_blind(api, study, people):
    mine = item_next_for_annotator(study=study, user=people["annotator1"])
    url = f"/api/studies/demo/items/{mine.item_id}/labeling/"

    body = api("annotator1").get(url).json()
    assert body["assignment"]["id"] == mine.pk
    assert body["assignment"]["annotator"] == "annotator1"
    assert body["issue"]["id"] == mine.item.issue_id
    assert "comments" in body["issue"] and "linked_fixes" in body["issue"]
    assert body["codebook_version"] == study.codebook_version_id
    keys = [dimension["key"] for dimension in body["dimensions"]]
    assert keys[0] == "screening" and "root_cause" in keys
    assert body["locked"] is False

    # A member whose queue it is not in (every item here is both annotators'), a wrong id: 404.
    assert api("manager").get(url).status_code == 404
    assert api("adjudicator").get(url).status_code == 404
    for bad in ("0", "abc", str(2**63)):
        assert api("annotator1").get(f"/api/studies/demo/items/{bad}/labeling/").status_code == 404


def test_labeling_item_dimensions_follow_the_studys_required_list(api, study, people):
    study.required_dimensions = ["screening"]
    study.save(update_fields=["required_dimensions"])
    mine = item_next_for_annotator(study=study, user=people["annotator1"])
    body = api("annotator1").get(f"/api/studies/demo/items/{mine.item_id}/labeling/").json()
    required = {d["key"] for d in body["dimensions"] if d["required"]}
    assert required == {"screening"}
