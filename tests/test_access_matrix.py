"""Who gets what: every page and API route of a study, by every role, as a matrix of statuses.

Two studies: "demo" (the `study` fixture: a manager, two annotators, an adjudicator) and
"other", with its own manager and annotator and one issue of its own. Ids of the other study's
items, issues and assignments are tried through demo's routes and the other way round (no
IDOR): what a user may not see is a 404 exactly like what does not exist; a 403 only tells a
member that their role does not allow the action.
"""

import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from rest_framework.test import APIClient

from corpus.models import Issue
from corpus.services import issues_import
from labeling.models import Assignment
from labeling.services.studies import study_create
from tests.conftest import SAMPLE_ISSUES_FILE

ROLES = [
    "manager",
    "annotator",
    "adjudicator",
    "other_annotator",
    "other_manager",
    "superuser",
    "anonymous",
]
LOGIN = "login"  # a page's redirect to the login form


@dataclass
class World:
    codebook_version_id: int
    demo_issue_id: int
    demo_item_id: int  # annotator's item in demo
    demo_assignment_id: int  # annotator's assignment in demo
    other_issue_id: int  # in the other study only
    other_item_id: int
    other_assignment_id: int


@pytest.fixture
def world(study, people, make_user, codebook_version) -> tuple[World, dict[str, Any]]:
    line = json.loads(SAMPLE_ISSUES_FILE.read_text().splitlines()[0])
    line.update(number=990_001, id=990_001, title="An issue of the other study only")
    issues_import(objects=[(1, line)])
    other_issue = Issue.objects.get(number=990_001)
    users = {
        "manager": people["manager"],
        "annotator": people["annotator1"],
        "adjudicator": people["adjudicator"],
        "other_annotator": make_user("other_annotator"),
        "other_manager": make_user("other_manager"),
        "superuser": make_user("root", is_staff=True, is_superuser=True),
        "anonymous": None,
    }
    study_create(
        slug="other",
        name="Other",
        codebook_version=codebook_version,
        k=1,
        annotators=[users["other_annotator"]],
        managers=[users["other_manager"]],
        issues=[other_issue],
    )
    mine = Assignment.objects.filter(annotator=users["annotator"], item__study__slug="demo")
    mine = mine.select_related("item").order_by("item_id").first()
    theirs = Assignment.objects.select_related("item").get(item__study__slug="other")
    return (
        World(
            codebook_version_id=codebook_version.id,
            demo_issue_id=mine.item.issue_id,
            demo_item_id=mine.item_id,
            demo_assignment_id=mine.id,
            other_issue_id=other_issue.id,
            other_item_id=theirs.item_id,
            other_assignment_id=theirs.id,
        ),
        users,
    )


@dataclass
class Case:
    name: str
    method: str
    url: str  # formatted with the World's fields
    expected: dict[str, int | str]  # by role
    data: dict | None = None


def page(name, url, expected, method="get", data=None) -> Case:
    return Case(name, method, url, {**expected, "anonymous": LOGIN}, data)


def api(name, url, expected, method="get", data=None) -> Case:
    # Session authentication comes first, so an anonymous request is a 403 (not a 401).
    return Case(name, method, url, {**expected, "anonymous": 403}, data)


def demo(members: int | str, *, others: int = 404, superuser: int | str | None = None) -> dict:
    """Demo's three roles alike; the other study's people `others`; the superuser as a member."""
    return {
        "manager": members,
        "annotator": members,
        "adjudicator": members,
        "other_annotator": others,
        "other_manager": others,
        "superuser": members if superuser is None else superuser,
    }


def only(status: int, *roles: str, rest: int = 404) -> dict:
    return {role: status if role in roles else rest for role in ROLES if role != "anonymous"}


NOBODY = only(200)  # 404 for every signed-in role
SOURCE_MANAGERS = only(200, "manager", "other_manager", "superuser", rest=403)

CASES = [
    # Pages
    page("home", "/", demo(200, others=200)),
    page("study overview", "/studies/demo/", demo(200)),
    page("queue", "/studies/demo/queue/", demo(200)),
    page("next item", "/studies/demo/next/", demo(302)),
    page("next item claim", "/studies/demo/next/", demo(302), method="post"),
    page("labeling page", "/studies/demo/items/{demo_item_id}/", only(200, "annotator")),
    page(
        "labeling autosave",
        "/studies/demo/items/{demo_item_id}/draft/",
        only(200, "annotator"),
        method="post",
    ),
    page(
        "labeling submit",
        "/studies/demo/items/{demo_item_id}/",
        only(400, "annotator"),  # reaches the form: nothing is filled in
        method="post",
        data={"action": "submit"},
    ),
    page(
        "labeling page: another study's item under demo's slug",
        "/studies/demo/items/{other_item_id}/",
        NOBODY,
    ),
    page(
        "agreement page",
        "/studies/demo/agreement/",
        {**demo(200), "annotator": 403},
    ),
    page(
        "other study's overview",
        "/studies/other/",
        only(200, "other_annotator", "other_manager", "superuser"),
    ),
    page(
        "other study's labeling page",
        "/studies/other/items/{other_item_id}/",
        only(200, "other_annotator"),
    ),
    page(
        "other study's agreement page",
        "/studies/other/agreement/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    page("unknown study", "/studies/nope/", NOBODY),
    page("codebooks", "/codebooks/", demo(200, others=200)),
    page("codebook version", "/codebooks/versions/{codebook_version_id}/", demo(200, others=200)),
    page("unknown codebook version", "/codebooks/versions/999999/", NOBODY),
    page("sources", "/sources/", SOURCE_MANAGERS),
    # API
    api("studies", "/api/studies/", demo(200, others=200)),
    api("study", "/api/studies/demo/", demo(200)),
    api("unknown study", "/api/studies/nope/", NOBODY),
    api("agreement", "/api/studies/demo/agreement/", {**demo(200), "annotator": 403}),
    api(
        "other study's agreement",
        "/api/studies/other/agreement/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    api(
        "next",
        "/api/studies/demo/next/",
        {**demo(204), "annotator": 200},  # nothing to give to who does not annotate
        method="post",
    ),
    api("issues", "/api/issues/", demo(200, others=200)),
    api("demo's issue", "/api/issues/{demo_issue_id}/", demo(200)),
    api(
        "other study's issue",
        "/api/issues/{other_issue_id}/",
        only(200, "other_annotator", "other_manager", "superuser"),
    ),
    api("assignments", "/api/assignments/", demo(200, others=200)),
    api(
        "an annotator's assignment",
        "/api/assignments/{demo_assignment_id}/",
        only(200, "annotator", "manager", "superuser"),
    ),
    api(
        "another study's assignment",
        "/api/assignments/{other_assignment_id}/",
        only(200, "other_annotator", "other_manager", "superuser"),
    ),
    api("unknown assignment", "/api/assignments/999999/", NOBODY),
    api(
        "draft",
        "/api/assignments/{demo_assignment_id}/draft/",
        only(200, "annotator"),  # not even a manager or a superuser writes in another's name
        method="post",
        data={"answers": {}},
    ),
    api(
        "submit",
        "/api/assignments/{other_assignment_id}/submit/",
        only(400, "other_annotator"),  # reaches the service: required dimensions are missing
        method="post",
        data={"answers": {}},
    ),
    api(
        "skip",
        "/api/assignments/{demo_assignment_id}/skip/",
        only(200, "annotator"),
        method="post",
        data={"reason": "not about training"},
    ),
    api("codebooks", "/api/codebooks/", demo(200, others=200)),
    api(
        "codebook version",
        "/api/codebook-versions/{codebook_version_id}/",
        demo(200, others=200),
    ),
    api("sources", "/api/sources/", SOURCE_MANAGERS),
    api("sync runs", "/api/sync-runs/", SOURCE_MANAGERS),
    # Resolution API. demo's item is still being labeled: blind to its adjudicator and to its
    # annotator (who has not submitted), open to the managers, who are refused only by the
    # service (nothing to resolve yet).
    api("disagreements", "/api/studies/demo/disagreements/", {**demo(200), "annotator": 403}),
    api(
        "other study's disagreements",
        "/api/studies/other/disagreements/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    api(
        "item side by side",
        "/api/studies/demo/items/{demo_item_id}/resolution/",
        only(200, "manager", "superuser"),
    ),
    api(
        "item side by side: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/resolution/",
        NOBODY,
    ),
    api(
        "decide",
        "/api/studies/demo/items/{demo_item_id}/resolutions/",
        {**only(400, "manager", "superuser"), "annotator": 403},
        method="post",
        data={"dimension": "screening", "categories": ["include"]},
    ),
    api(
        "decide: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/resolutions/",
        {**NOBODY, "annotator": 403},  # the role is refused before any item is looked up
        method="post",
        data={"dimension": "screening", "categories": ["include"]},
    ),
    api(
        "other study's decide",
        "/api/studies/other/items/{other_item_id}/resolutions/",
        {**only(400, "other_manager", "superuser"), "other_annotator": 403},
        method="post",
        data={"dimension": "screening", "categories": ["include"]},
    ),
    api(
        "discussion",
        "/api/studies/demo/items/{demo_item_id}/discussion/",
        only(200, "manager", "superuser"),
    ),
    api(
        "discussion: add",
        "/api/studies/demo/items/{demo_item_id}/discussion/",
        only(201, "manager", "superuser"),
        method="post",
        data={"body": "Which log line?"},
    ),
    api(
        "discussion: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/discussion/",
        NOBODY,
    ),
    api(
        "tie-breaker",
        "/api/studies/demo/items/{demo_item_id}/tiebreaker/",
        {**only(400, "manager", "superuser"), "annotator": 403},  # not in resolution yet
        method="post",
    ),
    api(
        "tie-breaker: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/tiebreaker/",
        {**NOBODY, "annotator": 403},
        method="post",
    ),
    # Setting studies up. Nobody here holds the add-study permission: only the superuser may
    # create (an empty body reaches validation: 400) or preview.
    api(
        "create a study",
        "/api/studies/",
        only(400, "superuser", rest=403),
        method="post",
    ),
    api(
        "sample preview",
        "/api/studies/preview/",
        only(200, "superuser", rest=403),
        method="post",
        data={"selection": {}},
    ),
    api("dashboard", "/api/studies/demo/dashboard/", {**demo(200), "annotator": 403}),
    api(
        "other study's dashboard",
        "/api/studies/other/dashboard/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    api(
        "members",
        "/api/studies/demo/members/",
        {**only(200, "manager", "superuser"), "annotator": 403, "adjudicator": 403},
    ),
    api(
        "members: add",
        "/api/studies/demo/members/",
        {**only(201, "manager", "superuser"), "annotator": 403, "adjudicator": 403},
        method="post",
        data={"username": "adjudicator", "role": "adjudicator"},  # already one: no change
    ),
    api(
        "members: remove the last manager",
        "/api/studies/demo/members/manager/manager/",
        {**only(400, "manager", "superuser"), "annotator": 403, "adjudicator": 403},
        method="delete",
    ),
    api(
        "members: reassign to no one known",
        "/api/studies/demo/members/annotator1/reassign/",
        {**only(400, "manager", "superuser"), "annotator": 403, "adjudicator": 403},
        method="post",
        data={"to": "nobody"},
    ),
    api(
        "other study's members",
        "/api/studies/other/members/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
]


def _status(case: Case, user, world: World) -> int | str:
    url = case.url.format(**vars(world))
    if case.url.startswith("/api/"):
        client = APIClient()
        if user is not None:
            client.force_authenticate(user)
        response = getattr(client, case.method)(url, case.data or {}, format="json")
    else:
        client = Client()
        if user is not None:
            client.force_login(user)
        response = getattr(client, case.method)(url, case.data or {})
    if response.status_code == 302 and response.url.startswith("/accounts/login/"):
        return LOGIN
    if url.startswith("/api/") and response.status_code >= 400:
        assert set(response.json()["error"]) == {"code", "message", "details"}, url
    return response.status_code


def test_the_matrix_covers_every_role():
    for case in CASES:
        assert set(case.expected) == set(ROLES), case.name


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_access_matrix(world, case: Case):
    """One route, every role: the table of statuses is exactly the expected one."""
    ids, users = world
    seen = {role: _status(case, users[role], ids) for role in ROLES}
    assert seen == case.expected


@pytest.mark.parametrize(
    "url, role, expected",
    [
        ("/api/assignments/", "annotator", {"demo": 45}),
        ("/api/assignments/", "manager", {"demo": 90}),
        ("/api/assignments/", "adjudicator", {}),
        ("/api/assignments/", "other_annotator", {"other": 1}),
        ("/api/assignments/", "other_manager", {"other": 1}),
        ("/api/assignments/", "superuser", {"demo": 90, "other": 1}),
        ("/api/studies/", "annotator", {"demo": 1}),
        ("/api/studies/", "other_manager", {"other": 1}),
        ("/api/studies/", "superuser", {"demo": 1, "other": 1}),
    ],
)
def test_lists_hold_only_what_the_role_may_see(world, url, role, expected):
    _, users = world
    client = APIClient()
    client.force_authenticate(users[role])
    results = client.get(url, {"page_size": 500}).json()
    rows = results["results"]
    while results.get("next"):
        results = client.get(results["next"]).json()
        rows += results["results"]
    by_study: dict[str, int] = {}
    for row in rows:
        key = row.get("study") or row.get("slug")
        by_study[key] = by_study.get(key, 0) + 1
    assert by_study == expected


@pytest.mark.parametrize(
    "role, expected",
    [
        ("annotator", {"demo"}),
        ("adjudicator", {"demo"}),
        ("other_annotator", {"other"}),
        ("superuser", {"demo", "other"}),
    ],
)
def test_issue_list_holds_only_the_roles_issues(world, role, expected):
    ids, users = world
    client = APIClient()
    client.force_authenticate(users[role])
    issues = []
    url = "/api/issues/"
    while url:
        body = client.get(url).json()
        issues += [row["id"] for row in body["results"]]
        url = body.get("next")
    seen = set()
    if ids.demo_issue_id in issues:
        seen.add("demo")
    if ids.other_issue_id in issues:
        seen.add("other")
    assert seen == expected
