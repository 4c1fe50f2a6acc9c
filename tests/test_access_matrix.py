"""Who gets what: every page and API route, by every role, as a matrix of statuses.

Two studies: "demo" (as the `study` fixture makes it: a manager, two annotators, an
adjudicator) and "other", with its own manager and annotator, one issue of its own and a
codebook of its own. Ids of the other study's items, issues, assignments, export jobs and
codebook are tried through demo's routes and the other way round (no IDOR): what a user may not
see is a 404 exactly like what does not exist; a 403 only tells a member that their role does
not allow the action.

Each role's request runs in a savepoint rolled back afterwards, so that one role's write (a
deleted source, a revoked token) never changes what the next role or case sees: the table does
not depend on the order of the roles or the cases, and the world is built once for the module.

`test_every_route_and_method_has_a_case` walks the URL resolver: every route of the project and
every method its view answers has a case here, or a reason in `EXEMPT`.
"""

import io
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import transaction
from django.test import Client, override_settings
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404
from rest_framework.test import APIClient

from accounts.services import api_token_create
from accounts.sso_settings import sso_providers_config
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from exports.jobs import export_job_start
from exports.services import export_job_run
from ingest.dispatch import issue_upload_start, sync_request
from ingest.sources import source_create
from labeling.models import Assignment
from labeling.services.invitations import invitation_create
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.drafts import codebook_draft_create
from taxonomy.services import codebook_load
from tests.conftest import CODEBOOK_FILE, PASSWORD, SAMPLE_ISSUES_FILE

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
    codebook_version_id: int  # demo's, published
    codebook_id: int
    draft_version_id: int  # a draft of demo's codebook
    other_codebook_version_id: int  # the other study's codebook, published
    demo_issue_id: int
    demo_item_id: int  # annotator's item in demo
    demo_assignment_id: int  # annotator's assignment in demo
    other_issue_id: int  # in the other study only
    other_item_id: int
    other_assignment_id: int
    demo_export_id: int  # done, with its file
    other_export_id: int  # done, with its file
    manager_token_id: int  # the demo manager's API token
    source_id: int
    sync_run_id: int
    demo_round_id: int
    other_round_id: int
    demo_invitation_id: int
    demo_issue_import_id: int  # queued
    other_issue_import_id: int


def _world_build() -> tuple[World, dict[str, Any]]:
    """demo as the `study` fixture makes it, the other study, and what their routes name."""
    make_user = get_user_model().objects.create_user
    codebook_version, _ = codebook_load(
        data=codebook_file_read(CODEBOOK_FILE.read_bytes()), publish=True
    )
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    sample_issues = list(Issue.objects.order_by("repository", "number"))
    line = json.loads(SAMPLE_ISSUES_FILE.read_text().splitlines()[0])
    line.update(number=990_001, id=990_001, title="An issue of the other study only")
    issues_import(objects=[(1, line)])
    other_issue = Issue.objects.get(number=990_001)
    # The usernames of the `people` fixture.
    users = {
        role: make_user(username=username, password=PASSWORD)
        for role, username in (
            ("manager", "manager"),
            ("annotator", "annotator1"),
            ("adjudicator", "adjudicator"),
            ("other_annotator", "other_annotator"),
            ("other_manager", "other_manager"),
        )
    }
    annotator2 = make_user(username="annotator2", password=PASSWORD)
    users["superuser"] = make_user(
        username="root", password=PASSWORD, is_staff=True, is_superuser=True
    )
    users["anonymous"] = None
    demo = study_create(
        slug="demo",
        name="Demo",
        codebook_version=codebook_version,
        k=2,
        annotators=[users["annotator"], annotator2],
        managers=[users["manager"]],
        adjudicators=[users["adjudicator"]],
        issues=sample_issues,
    )
    # A codebook of its own, so that a manager of one study is refused the other's codebook.
    other_codebook = codebook_file_read(CODEBOOK_FILE.read_bytes())
    other_codebook["name"] = "another-codebook"
    other_version, _ = codebook_load(data=other_codebook, publish=True)
    other = study_create(
        slug="other",
        name="Other",
        codebook_version=other_version,
        k=1,
        annotators=[users["other_annotator"]],
        managers=[users["other_manager"]],
        issues=[other_issue],
    )
    mine = Assignment.objects.filter(annotator=users["annotator"], item__study__slug="demo")
    mine = mine.select_related("item").order_by("item_id").first()
    theirs = Assignment.objects.select_related("item").get(item__study__slug="other")
    exports = {
        slug: export_job_run(job_id=export_job_start(study=owner, user=users[manager]).pk)
        for slug, owner, manager in (("demo", demo, "manager"), ("other", other, "other_manager"))
    }
    token, _ = api_token_create(user=users["manager"], name="matrix")
    source = source_create(repository="microsoft/DeepSpeed", created_by=users["manager"])
    issue_imports = {
        slug: issue_upload_start(
            study=owner, user=users[manager], stream=io.BytesIO(b"[]"), size=2, filename="a.json"
        )
        for slug, owner, manager in (("demo", demo, "manager"), ("other", other, "other_manager"))
    }
    return (
        World(
            codebook_version_id=codebook_version.id,
            codebook_id=codebook_version.codebook_id,
            draft_version_id=codebook_draft_create(version=codebook_version, label="0.2.0").id,
            other_codebook_version_id=other_version.id,
            demo_issue_id=mine.item.issue_id,
            demo_item_id=mine.item_id,
            demo_assignment_id=mine.id,
            other_issue_id=other_issue.id,
            other_item_id=theirs.item_id,
            other_assignment_id=theirs.id,
            demo_export_id=exports["demo"].id,
            other_export_id=exports["other"].id,
            manager_token_id=token.id,
            source_id=source.id,
            sync_run_id=sync_request(source=source, requested_by=users["manager"]).id,
            demo_round_id=demo.rounds.get().id,
            other_round_id=other.rounds.get().id,
            demo_invitation_id=invitation_create(
                study=demo, by=users["manager"], role="annotator"
            ).invitation.id,
            demo_issue_import_id=issue_imports["demo"].id,
            other_issue_import_id=issue_imports["other"].id,
        ),
        users,
    )


@pytest.fixture(scope="module")
def built_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The world, built once for the module in a transaction rolled back at its end. No case
    changes it: every request runs in a savepoint rolled back after it (`_status`)."""
    media = override_settings(MEDIA_ROOT=str(tmp_path_factory.mktemp("media")))
    with django_db_blocker.unblock(), media, transaction.atomic():
        yield _world_build()
        transaction.set_rollback(True)


@pytest.fixture
def world(db, built_world) -> tuple[World, dict[str, Any]]:
    return built_world


@dataclass
class Case:
    name: str
    method: str
    url: str  # formatted with the World's fields
    expected: dict[str, int | str]  # by role
    data: dict | None = None


def page(name, url, expected, method="get", data=None) -> Case:
    return Case(name, method, url, {**expected, "anonymous": LOGIN}, data)


def public(name, url, status, method="get", data=None) -> Case:
    """A page for everyone, signed in or not (the sign-in and password pages)."""
    return Case(name, method, url, dict.fromkeys(ROLES, status), data)


def api(name, url, expected, method="get", data=None) -> Case:
    # An anonymous request is a 401 with the token's WWW-Authenticate challenge.
    return Case(f"API {name}", method, url, {**expected, "anonymous": 401}, data)


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


def only(status: int | str, *roles: str, rest: int = 404) -> dict:
    return {role: status if role in roles else rest for role in ROLES if role != "anonymous"}


def signed_in(status: int | str) -> dict:
    """Every signed-in role alike (what is not a study's: codebooks, one's own account)."""
    return only(status, *ROLES)


def managers(status: int | str) -> dict:
    """Demo's managers (the superuser is one); its other members 403; outsiders 404."""
    return {**only(status, "manager", "superuser"), "annotator": 403, "adjudicator": 403}


def overseers(status: int | str) -> dict:
    """Demo's managers and adjudicators; its annotator 403; outsiders 404."""
    return {**only(status, "manager", "adjudicator", "superuser"), "annotator": 403}


def editors(status: int | str) -> dict:
    """Who edits demo's codebook (labeling.access.codebook_can_edit): the managers of a study
    that uses it and superusers. Everyone else signed in reads it, so is refused with a 403."""
    return only(status, "manager", "superuser", rest=403)


NOBODY = only(200)  # 404 for every signed-in role
SOURCE_MANAGERS = only(200, "manager", "other_manager", "superuser", rest=403)


def source_managers(status: int | str) -> dict:
    return only(status, "manager", "other_manager", "superuser", rest=403)


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
    # Machine annotators: managers list and add them and read a run's record; an item's
    # machine labels are under the blind rule (a 404 for whoever may not see them yet).
    api("machine annotators", "/api/studies/demo/machines/", managers(200)),
    api(
        "machine annotator: add (an empty body reaches validation)",
        "/api/studies/demo/machines/",
        managers(400),
        method="post",
        data={},
    ),
    api("machine run: none such", "/api/studies/demo/machines/runs/999999/", managers(404)),
    api(
        "machine run: resume none such",
        "/api/studies/demo/machines/runs/999999/resume/",
        managers(404),
        method="post",
    ),
    api("machine labels export", "/api/studies/demo/machines/export/", managers(200)),
    api(
        "machine annotator: a scikit-learn run",
        "/api/studies/demo/machines/classical/",
        managers(202),
        method="post",
    ),
    api(
        "machine rater: none",
        "/api/studies/demo/machines/rater/",
        managers(200),
        method="put",
        data={"annotator": None},
    ),
    api(
        "machine labels of an item",
        "/api/studies/demo/items/{demo_item_id}/machine-labels/",
        # The adjudicator sees them once the item is in resolution; it is still open here.
        {**demo(200), "annotator": 404, "adjudicator": 404},
    ),
    api(
        "upstream review",
        "/api/studies/demo/items/{demo_item_id}/upstream-review/",
        managers(400),  # reaches the service: the issue has not changed
        method="post",
    ),
    api(
        "upstream review: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/upstream-review/",
        {**NOBODY, "annotator": 403, "adjudicator": 403},
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


# Pages of a study, their forms and downloads. A page that does not restrict its methods answers
# a POST like its GET: the POST cases say that it goes through the same checks.
CASES += [
    page("home: POST", "/", signed_in(405), method="post"),
    page("study overview: POST", "/studies/demo/", signed_in(405), method="post"),
    page("queue: POST", "/studies/demo/queue/", signed_in(405), method="post"),
    page(
        "next item: another study's member",
        "/studies/other/next/",
        only(302, "other_annotator", "other_manager", "superuser"),
    ),
    page("agreement page: POST", "/studies/demo/agreement/", signed_in(405), method="post"),
    page("agreement download", "/studies/demo/agreement/?download=csv", overseers(200)),
    page("report page", "/studies/demo/report/", overseers(200)),
    page("report page: POST", "/studies/demo/report/", signed_in(405), method="post"),
    page(
        "report download",
        "/studies/demo/report/?table=distribution-screening&format=csv",
        overseers(200),
    ),
    page("report download: zip", "/studies/demo/report/?format=zip", overseers(200)),
    page(
        "other study's report page",
        "/studies/other/report/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    # Resolution pages. demo's item is still being labeled: blind to its adjudicator.
    page("disagreements page", "/studies/demo/disagreements/", overseers(200)),
    page(
        "disagreements page: POST",
        "/studies/demo/disagreements/",
        signed_in(405),
        method="post",
    ),
    page(
        "side by side page",
        "/studies/demo/items/{demo_item_id}/resolve/",
        only(200, "manager", "superuser"),
    ),
    page(
        "side by side page: another study's item under demo's slug",
        "/studies/demo/items/{other_item_id}/resolve/",
        NOBODY,
    ),
    page(
        "decide page",
        "/studies/demo/items/{demo_item_id}/resolve/",
        only(400, "manager", "superuser"),  # reaches the service: nothing to resolve yet
        method="post",
        data={"action": "decide", "dimension": "screening", "categories": ["include"]},
    ),
    page(
        "discussion page: add",
        "/studies/demo/items/{demo_item_id}/discussion/",
        # The annotator has not submitted: they may not read or write it yet.
        {**only(302, "manager", "superuser"), "annotator": 403},
        method="post",
        data={"body": ""},
    ),
    page(
        "discussion page: another study's item under demo's slug",
        "/studies/demo/items/{other_item_id}/discussion/",
        NOBODY,
        method="post",
        data={"body": "x"},
    ),
    page(
        "upstream review page",
        "/studies/demo/items/{demo_item_id}/upstream-review/",
        # Back to the side-by-side page with the service's message (nothing changed upstream).
        only(302, "manager", "superuser"),
        method="post",
    ),
    page(
        "upstream review page: another study's item under demo's slug",
        "/studies/demo/items/{other_item_id}/upstream-review/",
        NOBODY,
        method="post",
    ),
    # Labeling actions on a page
    page(
        "labeling autosave: another study's item under demo's slug",
        "/studies/demo/items/{other_item_id}/draft/",
        NOBODY,
        method="post",
    ),
    page(
        "labeling skip",
        "/studies/demo/items/{demo_item_id}/",
        only(400, "annotator"),  # reaches the form: no reason given
        method="post",
        data={"action": "skip"},
    ),
    # Setting studies up: the superuser holds the add-study permission, nobody else here.
    page("new study", "/studies/new/", only(200, "superuser", rest=403)),
    page("new study: create", "/studies/new/", only(400, "superuser", rest=403), method="post"),
    page("new study: preview", "/studies/new/preview/", only(200, "superuser", rest=403)),
    page(
        "new study: preview (POST)",
        "/studies/new/preview/",
        only(200, "superuser", rest=403),
        method="post",
    ),
    page("members page", "/studies/demo/members/", managers(200)),
    page("machine annotators page", "/studies/demo/machines/", managers(200)),
    page(
        "machine annotators page: add (an empty form reaches validation)",
        "/studies/demo/machines/",
        managers(400),
        method="post",
        data={"action": "add"},
    ),
    page("machine run page: none such", "/studies/demo/machines/runs/999999/", managers(404)),
    page("machine labels export", "/studies/demo/export/machines/?file=labels", managers(200)),
    page(
        "other study's machine annotators page",
        "/studies/other/machines/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    page(
        "members page: add",
        "/studies/demo/members/",
        managers(400),  # reaches the form: no user named
        method="post",
        data={"action": "add"},
    ),
    page(
        "other study's members page",
        "/studies/other/members/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    # The dataset export: the study's managers.
    page("export page", "/studies/demo/export/", managers(200)),
    page(
        "export page: start",
        "/studies/demo/export/",
        managers(400),  # reaches the form: no such format
        method="post",
        data={"format": "nope"},
    ),
    page("export jobs", "/studies/demo/export/jobs/", managers(200)),
    page(
        "export job download",
        "/studies/demo/export/jobs/{demo_export_id}/download/",
        managers(200),
    ),
    page(
        "export job download: another study's job under demo's slug",
        "/studies/demo/export/jobs/{other_export_id}/download/",
        managers(404),  # not even the superuser: the job is not demo's
    ),
    page(
        "other study's export job download",
        "/studies/other/export/jobs/{other_export_id}/download/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    page(
        "direct download",
        "/studies/demo/export/download/?format=jsonl&raw=on",
        managers(200),
    ),
    # Codebooks: read by everyone signed in, edited by demo's manager (its study uses it) and
    # the superuser; the other study's manager uses another codebook.
    page("codebooks: POST", "/codebooks/", signed_in(405), method="post"),
    page(
        "codebook version: POST",
        "/codebooks/versions/{codebook_version_id}/",
        signed_in(405),
        method="post",
    ),
    page("codebook draft", "/codebooks/versions/{draft_version_id}/", signed_in(200)),
    page(
        "codebook: start a draft",
        "/codebooks/versions/{codebook_version_id}/draft/",
        editors(302),  # reaches the service: no label given, back to the version
        method="post",
    ),
    page(
        "codebook: start a draft of the other study's codebook",
        "/codebooks/versions/{other_codebook_version_id}/draft/",
        only(302, "other_manager", "superuser", rest=403),
        method="post",
    ),
    page("codebook editor", "/codebooks/versions/{draft_version_id}/edit/", editors(200)),
    page(
        "codebook editor: change",
        "/codebooks/versions/{draft_version_id}/edit/",
        editors(400),  # reaches the editor: no such action
        method="post",
        data={"action": "nope"},
    ),
    page(
        "codebook editor: the other study's codebook",
        "/codebooks/versions/{other_codebook_version_id}/edit/",
        only(302, "other_manager", "superuser", rest=403),  # published: back to the version
    ),
    page(
        "codebook editor: unknown version",
        "/codebooks/versions/999999/edit/",
        NOBODY,
    ),
    page(
        "codebook export",
        "/codebooks/versions/{codebook_version_id}/export/?format=yaml",
        signed_in(200),
    ),
    page(
        "codebook export: POST",
        "/codebooks/versions/{codebook_version_id}/export/",
        signed_in(405),
        method="post",
    ),
    page(
        "codebook export with a study's counts",
        "/codebooks/versions/{codebook_version_id}/export/?format=markdown&study=demo",
        {**only(200, "manager", "adjudicator", "superuser"), "annotator": 404},
    ),
    page(
        "codebook diff",
        "/codebooks/diff/?from={codebook_version_id}&to={draft_version_id}",
        signed_in(200),
    ),
    page(
        "codebook diff: POST",
        "/codebooks/diff/?from={codebook_version_id}&to={draft_version_id}",
        signed_in(405),
        method="post",
    ),
    # A study's codebook: moving it and deciding proposals are for its managers.
    page("study codebook", "/studies/demo/codebook/", managers(200)),
    page(
        "study codebook: move",
        "/studies/demo/codebook/",
        managers(200),  # reaches the form: no version chosen, the page says so
        method="post",
        data={"version": "{other_codebook_version_id}"},
    ),
    page("proposals", "/studies/demo/proposals/", managers(200)),
    page(
        "proposals: decide",
        "/studies/demo/proposals/",
        managers(400),  # reaches the service: no such action
        method="post",
        data={"action": "nope"},
    ),
    page(
        "recheck",
        "/studies/demo/recheck/",
        demo(200),  # the annotator's own labels; the overseers' gold labels
    ),
    page("recheck: POST", "/studies/demo/recheck/", signed_in(405), method="post"),
    # Sources feed every study: superusers and whoever manages a study.
    page(
        "sources: add",
        "/sources/",
        source_managers(400),  # reaches the form: no repository
        method="post",
    ),
    # One's own account.
    page("tokens page", "/account/tokens/", signed_in(200)),
    page(
        "tokens page: revoke the manager's token",
        "/account/tokens/",
        {**signed_in(404), "manager": 302},  # nobody else, not even a superuser
        method="post",
        data={"action": "revoke", "token": "{manager_token_id}"},
    ),
]

# Sign-in and password pages: Django's own views, for everyone.
CASES += [
    public("sign-in page", "/accounts/login/", 200),
    public(
        "sign in: wrong password",
        "/accounts/login/",
        200,
        method="post",
        data={"username": "x", "password": "y"},
    ),
    Case("sign out", "post", "/accounts/logout/", dict.fromkeys(ROLES, LOGIN)),
    page("password change", "/accounts/password_change/", signed_in(200)),
    page("password change: submit", "/accounts/password_change/", signed_in(200), method="post"),
    page("password changed", "/accounts/password_change/done/", signed_in(200)),
    public("password reset", "/accounts/password_reset/", 200),
    public("password reset: submit", "/accounts/password_reset/", 200, method="post"),
    public("password reset sent", "/accounts/password_reset/done/", 200),
    public("password reset link", "/accounts/reset/MQ/not-a-token/", 200),
    public("password reset link: submit", "/accounts/reset/MQ/not-a-token/", 200, method="post"),
    public("password reset done", "/accounts/reset/done/", 200),
]

# Single sign-on's routes (web/views/sso.py): without SSO_* settings, as here, they do not
# answer, for anyone; test_sso_routes_when_configured walks them with providers configured.
SSO_ROUTES = (
    "/accounts/oidc/lab/login/",
    "/accounts/oidc/lab/login/callback/",
    "/accounts/github/login/",
    "/accounts/github/login/callback/",
)
CASES += [
    public(f"single sign-on off: {method.upper()} {url}", url, 404, method=method)
    for url in SSO_ROUTES
    for method in ("get", "post")
]

# The API: its root, schema and docs, for anyone signed in.
CASES += [
    api("root", "/api/", signed_in(200)),
    api("schema", "/api/schema/", signed_in(200)),
    api("docs", "/api/docs/", signed_in(200)),
    api("codebook", "/api/codebooks/{codebook_id}/", signed_in(200)),
    api("codebook versions", "/api/codebook-versions/", signed_in(200)),
]

# Codebook editor over the API: a draft of demo's codebook; an empty body reaches validation.
CASES += [
    api(
        f"codebook editor: {action}",
        f"/api/codebook-versions/{{draft_version_id}}/{action}/",
        editors(400),
        method="post",
    )
    for action in ("dimension", "categories", "category", "remove", "merge", "split", "mapping")
]
CASES += [
    api(
        "codebook editor: start a draft",
        "/api/codebook-versions/{codebook_version_id}/drafts/",
        editors(400),  # no label
        method="post",
    ),
    api(
        "codebook editor: start a draft of the other study's codebook",
        "/api/codebook-versions/{other_codebook_version_id}/drafts/",
        only(400, "other_manager", "superuser", rest=403),
        method="post",
    ),
    api(
        "codebook editor: publish",
        "/api/codebook-versions/{codebook_version_id}/publish/",
        editors(400),  # published already
        method="post",
    ),
    api(
        "codebook editor: unknown version",
        "/api/codebook-versions/999999/publish/",
        NOBODY,
        method="post",
    ),
    api("codebook mapping", "/api/codebook-versions/{draft_version_id}/mapping/", signed_in(200)),
    api("codebook diff", "/api/codebook-versions/{draft_version_id}/diff/", signed_in(200)),
    api(
        "codebook export",
        "/api/codebook-versions/{codebook_version_id}/export/",
        signed_in(200),
    ),
    api(
        "codebook export with a study's counts",
        "/api/codebook-versions/{codebook_version_id}/export/?as=markdown&study=demo",
        # A study the user cannot see is a 404; one they see without overseeing it a 403.
        {**only(200, "manager", "adjudicator", "superuser", rest=404), "annotator": 403},
    ),
]

# A study's codebook over the API.
CASES += [
    api(
        "codebook migrate",
        "/api/studies/demo/codebook-migrate/",
        managers(400),  # another codebook's version: refused by the service
        method="post",
        data={"version": "{other_codebook_version_id}"},
    ),
    api("proposals", "/api/studies/demo/proposals/", managers(200)),
    api(
        "proposals: decide",
        "/api/studies/demo/proposals/decide/",
        managers(400),
        method="post",
    ),
    api("recheck", "/api/studies/demo/recheck/", demo(200)),
    api("agreement by version", "/api/studies/demo/agreement-by-version/", overseers(200)),
    api(
        "other study's agreement by version",
        "/api/studies/other/agreement-by-version/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
]

# Report tables over the API.
CASES += [
    api("report tables", "/api/studies/demo/tables/", overseers(200)),
    api("report table", "/api/studies/demo/tables/distribution-screening/", overseers(200)),
    api(
        "report table: CSV",
        "/api/studies/demo/tables/distribution-screening/?format=csv",
        overseers(200),
    ),
    api(
        "other study's report table",
        "/api/studies/other/tables/distribution-screening/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
]

# Exports over the API. A job the user may not see is a 404, whatever the role.
CASES += [
    api("study exports", "/api/studies/demo/exports/", managers(200)),
    api("study dataset", "/api/studies/demo/dataset/?format=jsonl&raw=true", managers(200)),
    api(
        "study exports: start",
        "/api/studies/demo/exports/",
        managers(400),
        method="post",
        data={"format": "nope"},
    ),
    api(
        "other study's exports",
        "/api/studies/other/exports/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    api("export job", "/api/exports/{demo_export_id}/", only(200, "manager", "superuser")),
    api(
        "export job download",
        "/api/exports/{demo_export_id}/download/",
        only(200, "manager", "superuser"),
    ),
    api(
        "other study's export job",
        "/api/exports/{other_export_id}/",
        only(200, "other_manager", "superuser"),
    ),
    api(
        "other study's export job download",
        "/api/exports/{other_export_id}/download/",
        only(200, "other_manager", "superuser"),
    ),
    api("unknown export job", "/api/exports/999999/", NOBODY),
]

# Queue, overview and the labeling item over the API.
CASES += [
    api("study overview", "/api/studies/demo/overview/", demo(200)),
    api("queue", "/api/studies/demo/queue/", demo(200)),
    api(
        "labeling item",
        "/api/studies/demo/items/{demo_item_id}/labeling/",
        only(200, "annotator"),  # blind: nobody else's queue, a manager's neither
    ),
    api(
        "labeling item: another study's item under demo's slug",
        "/api/studies/demo/items/{other_item_id}/labeling/",
        NOBODY,
    ),
    api(
        "other study's labeling item",
        "/api/studies/other/items/{other_item_id}/labeling/",
        only(200, "other_annotator"),
    ),
]

# Sources and sync runs.
CASES += [
    api(
        "sources: add",
        "/api/sources/",
        source_managers(400),  # no repository
        method="post",
    ),
    api("source", "/api/sources/{source_id}/", SOURCE_MANAGERS),
    api("source: delete", "/api/sources/{source_id}/", source_managers(204), method="delete"),
    api("unknown source", "/api/sources/999999/", source_managers(404)),
    api(
        "source: follow",
        "/api/sources/{source_id}/follows/",
        source_managers(400),  # no study named
        method="post",
    ),
    api(
        "source: follow, for demo",
        "/api/sources/{source_id}/follows/",
        # demo's manager and the superuser get it; the other study's manager may not see demo.
        {**source_managers(201), "other_manager": 404},
        method="post",
        data={"study": "demo"},
    ),
    api("source: sync", "/api/sources/{source_id}/sync/", source_managers(202), method="post"),
    api("sync run", "/api/sync-runs/{sync_run_id}/", SOURCE_MANAGERS),
]

# One's own API tokens: another user's token is a 404 for everyone, a superuser too.
CASES += [
    api("tokens", "/api/tokens/", signed_in(200)),
    api("tokens: create", "/api/tokens/", signed_in(400), method="post"),  # no name
    api(
        "tokens: revoke the manager's token",
        "/api/tokens/{manager_token_id}/",
        {**signed_in(404), "manager": 204},
        method="delete",
    ),
]

# A study's life: closing, reopening, the activity log.
CASES += [
    page(
        "study: close",
        "/studies/demo/status/",
        managers(302),
        method="post",
        data={"action": "close", "reason": "finished"},
    ),
    page("study activity log", "/studies/demo/activity/", overseers(200)),
    page("study activity log download", "/studies/demo/export/activity/", managers(200)),
    api(
        "study: close",
        "/api/studies/demo/close/",
        managers(200),
        method="post",
        data={"reason": "finished"},
    ),
    api(
        "study: reopen",
        "/api/studies/demo/reopen/",
        managers(400),  # reaches the service: the study is open already
        method="post",
        data={"reason": "more items"},
    ),
    api("study activity log", "/api/studies/demo/activity/", overseers(200)),
    page("study rounds", "/studies/demo/rounds/", managers(200)),
    page(
        "study rounds: targets",
        "/studies/demo/rounds/",
        managers(302),
        method="post",
        data={"action": "targets", "round": "{demo_round_id}", "target_kappa": "0.6"},
    ),
    api("study rounds", "/api/studies/demo/rounds/", overseers(200)),
    api(
        "round targets",
        "/api/studies/demo/rounds/{demo_round_id}/targets/",
        managers(200),
        method="post",
        data={"target_kappa": 0.6},
    ),
    api(
        "round targets: another study's round under demo's slug",
        "/api/studies/demo/rounds/{other_round_id}/targets/",
        {**managers(404), "annotator": 403, "adjudicator": 403},
        method="post",
        data={"target_kappa": 0.6},
    ),
    api(
        "round open",
        "/api/studies/demo/rounds/{demo_round_id}/open/",
        managers(400),  # reaches the service: no pilot holds it back
        method="post",
        data={"reason": "deadline"},
    ),
]

# People: invitations, accepting one, one's account.
CASES += [
    page("study invitations", "/studies/demo/invitations/", managers(200)),
    page(
        "study invitations: invite",
        "/studies/demo/invitations/",
        managers(200),  # the answer shows the new link once
        method="post",
        data={"action": "invite", "role": "annotator"},
    ),
    public("invitation page: unknown link", "/invitations/not-a-token/", 410),
    public("invitation page: accept an unknown link", "/invitations/not-a-token/", 410, "post"),
    page("account", "/account/", signed_in(200)),
    page("account: name", "/account/", signed_in(302), method="post", data={"first_name": "Ada"}),
    api("study invitations", "/api/studies/demo/invitations/", managers(200)),
    api(
        "study invitations: invite",
        "/api/studies/demo/invitations/",
        managers(201),
        method="post",
        data={"role": "adjudicator"},
    ),
    api(
        "study invitation: withdraw",
        "/api/studies/demo/invitations/{demo_invitation_id}/",
        managers(204),
        method="delete",
    ),
    Case(
        "API invitation accept: an unknown token",
        "post",
        "/api/invitations/accept/",
        dict.fromkeys(ROLES, 400),  # no sign-in needed: the token is the credential
        {"token": "not-a-token", "username": "guess", "password": PASSWORD},
    ),
    Case(
        "API invitation join: an unknown token",
        "post",
        "/api/invitations/join/",
        {**dict.fromkeys(ROLES, 400), "anonymous": 401},  # signed in: the account joins
        {"token": "not-a-token"},
    ),
]

# Uploads: an annotation CSV into a study, a codebook file. The API routes take multipart only:
# the matrix's JSON body reaches the parser (415) once the role is allowed.
CASES += [
    page("study import", "/studies/demo/import/", managers(200)),
    page("study import: upload", "/studies/demo/import/", managers(400), method="post"),
    page("codebook import", "/codebooks/import/", signed_in(200)),
    page("codebook import: upload", "/codebooks/import/", signed_in(400), method="post"),
    api(
        "study annotation import",
        "/api/studies/demo/annotation-import/",
        managers(415),
        method="post",
    ),
    api("codebook import", "/api/codebooks/import/", signed_in(415), method="post"),
    # Issue dumps into a study, imported in the background: the study's managers.
    page("study issue import", "/studies/demo/import/issues/", managers(200)),
    page(
        "study issue import: upload",
        "/studies/demo/import/issues/",
        managers(400),  # reaches the form: no file
        method="post",
    ),
    page("study issue import jobs", "/studies/demo/import/issues/jobs/", managers(200)),
    api("study issue imports", "/api/studies/demo/issue-imports/", managers(200)),
    api(
        "study issue imports: upload",
        "/api/studies/demo/issue-imports/",
        managers(415),
        method="post",
    ),
    api(
        "study issue import",
        "/api/studies/demo/issue-imports/{demo_issue_import_id}/",
        managers(200),
    ),
    api(
        "study issue import: another study's under demo's slug",
        "/api/studies/demo/issue-imports/{other_issue_import_id}/",
        managers(404),
    ),
    api(
        "other study's issue import",
        "/api/studies/other/issue-imports/{other_issue_import_id}/",
        {**only(200, "other_manager", "superuser"), "other_annotator": 403},
    ),
    # Restoring a study from its dataset file: who may set studies up (here the superuser).
    page("study restore", "/studies/restore/", only(200, "superuser", rest=403)),
    page(
        "study restore: upload",
        "/studies/restore/",
        only(400, "superuser", rest=403),  # reaches the form: no file
        method="post",
    ),
    api("study restore", "/api/studies/restore/", only(415, "superuser", rest=403), method="post"),
    api("account", "/api/account/", signed_in(200)),
    api("account: name", "/api/account/", signed_in(200), method="patch", data={"first_name": "A"}),
]

HEALTH = "/health/"


def _resolves(url: str) -> bool:
    try:
        resolve(url)
    except Resolver404:
        return False
    return True


if _resolves(HEALTH):
    # For load balancers and probes: no session needed, nothing of a study told.
    CASES.append(public("health", HEALTH, 200))

# The app's icon, asked for by every browser: a redirect to the static file, for everyone.
CASES.append(public("favicon", "/favicon.ico", 302))


def _formatted(case: Case, world: World) -> tuple[str, dict]:
    fields = vars(world)
    data = {
        key: value.format(**fields) if isinstance(value, str) else value
        for key, value in (case.data or {}).items()
    }
    return case.url.format(**fields), data


# The schema (OpenAPI YAML, its refusal too) and the docs page are not JSON.
API_DOCUMENTS = ("/api/schema/", "/api/docs/")


def _status(case: Case, user, world: World) -> int | str:
    url, data = _formatted(case, world)
    # A real session, as a browser has: token creation refuses anything else.
    client = APIClient() if url.startswith("/api/") else Client()
    if user is not None:
        client.force_login(user)
    # Each role in a savepoint rolled back afterwards: no role sees another's writes.
    with transaction.atomic():
        if url.startswith("/api/"):
            response = getattr(client, case.method)(url, data, format="json")
        else:
            response = getattr(client, case.method)(url, data)
        transaction.set_rollback(True)
    if response.status_code == 302 and response.url.startswith("/accounts/login/"):
        return LOGIN
    if url.startswith("/api/") and response.status_code >= 400 and url not in API_DOCUMENTS:
        assert set(response.json()["error"]) == {"code", "message", "details"}, url
    return response.status_code


def test_the_matrix_covers_every_role():
    for case in CASES:
        assert set(case.expected) == set(ROLES), case.name
    names = [case.name for case in CASES]
    assert len(names) == len(set(names)), "two cases share a name"


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_access_matrix(world, case: Case):
    """One route, every role: the table of statuses is exactly the expected one."""
    ids, users = world
    seen = {role: _status(case, users[role], ids) for role in ROLES}
    assert seen == case.expected


# Coverage: every route and method of the project has a case.

EXCLUDED_PREFIXES = {
    "admin/": "Django's own admin, for staff only (tests/security/test_admin_history.py)",
}
# DRF's router adds each route again with a format suffix (`.json`): the same view, the same
# permissions, checked through the route without it.
FORMAT_SUFFIXES = ("(?P<format>", "<drf_format_suffix:format>")
# (route, method): why it has no case. Empty on purpose; add only with a reason.
EXEMPT: dict[tuple[str, str], str] = {}
# Django views (pages, the auth views) say which methods they answer by refusing the others
# with a 405; these are the methods a browser sends. DRF views declare theirs.
PAGE_METHODS = ("get", "post")
DRF_METHODS = ("get", "post", "put", "patch", "delete")


def project_routes() -> dict[str, Any]:
    """Every route of the URL resolver, spelled as `ResolverMatch.route` spells it, with its
    view."""
    routes: dict[str, Any] = {}

    def walk(patterns, prefix: str) -> None:
        for pattern in patterns:
            route = URLResolver._join_route(prefix, str(pattern.pattern))
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns, route)
            elif isinstance(pattern, URLPattern):
                routes[route] = pattern.callback

    walk(get_resolver().url_patterns, "")
    return {
        route: view
        for route, view in routes.items()
        if not route.startswith(tuple(EXCLUDED_PREFIXES))
        if not any(suffix in route for suffix in FORMAT_SUFFIXES)
    }


def declared_methods(view) -> set[str] | None:
    """The methods of a DRF view (a viewset's action map, an APIView's handlers); None for a
    Django view, whose methods are found by asking it."""
    if actions := getattr(view, "actions", None):
        # A GET route answers HEAD too (DRF adds it to the map on the first request).
        return set(actions) - {"head", "options"}
    if view_class := getattr(view, "cls", None):
        return {method for method in DRF_METHODS if hasattr(view_class, method)}
    return None


def test_routes_are_found():
    routes = project_routes()
    assert "studies/<slug:slug>/export/" in routes
    assert "api/studies/(?P<slug>[^/.]+)/items/(?P<item_id>[^/.]+)/resolution/$" in routes
    assert "api/codebook-versions/<int:pk>/publish/" in routes
    assert not any(route.startswith("admin/") for route in routes)


def test_every_route_and_method_has_a_case(world):
    """A route or a method without a case fails, named. A Django view's methods are those it
    does not refuse with a 405 when the superuser sends them to a case's URL."""
    ids, users = world
    covered: dict[str, dict[str, Case]] = {}
    for case in CASES:
        url, _ = _formatted(case, ids)
        covered.setdefault(resolve(url.split("?")[0]).route, {})[case.method] = case
    missing = []
    for route, view in sorted(project_routes().items()):
        cases = covered.get(route, {})
        methods = declared_methods(view)
        if methods is None:
            methods = set(PAGE_METHODS)
            if cases:
                probe = next(iter(cases.values()))
                for method in PAGE_METHODS:
                    if method not in cases:
                        asked = Case("probe", method, probe.url, {}, probe.data)
                        if _status(asked, users["superuser"], ids) == 405:
                            methods.discard(method)
        missing += [
            f"{method.upper()} {route}"
            for method in sorted(methods - set(cases))
            if (route, method) not in EXEMPT
        ]
    assert not missing, "no case in the matrix for:\n" + "\n".join(missing)
    routes = project_routes()
    assert all(route in routes for route, _ in EXEMPT), "an exemption names no route"


def test_sso_routes_when_configured(world):
    """With both providers configured, every role alike: a GET of a start shows its button, a
    POST sends to the provider (only the GitHub one here: the lab's would ask its provider for
    its discovery document first), a return without a state is refused; another provider id
    than the lab's is a 404."""
    ids, users = world
    providers = sso_providers_config(
        oidc_server_url="http://127.0.0.1:9/",
        oidc_client_id="issuecoder",
        oidc_client_secret="not-secret",
        oidc_name="Lab",
        github_client_id="gh-client",
        github_client_secret="not-secret",
    )
    cases = [
        public("lab start page", "/accounts/oidc/lab/login/", 200),
        public("lab return", "/accounts/oidc/lab/login/callback/", 400),
        public("lab return: post", "/accounts/oidc/lab/login/callback/", 400, method="post"),
        public("other provider id", "/accounts/oidc/other/login/", 404),
        public("GitHub start page", "/accounts/github/login/", 200),
        public("GitHub start", "/accounts/github/login/", 302, method="post"),
        public("GitHub return", "/accounts/github/login/callback/", 400),
        public("GitHub return: post", "/accounts/github/login/callback/", 400, method="post"),
    ]
    with override_settings(SOCIALACCOUNT_PROVIDERS=providers):
        for case in cases:
            seen = {role: _status(case, users[role], ids) for role in ROLES}
            assert seen == case.expected, case.name


@pytest.mark.parametrize("role", [role for role in ROLES if role != "anonymous"])
def test_token_list_holds_only_ones_own(world, role):
    """The manager's token is listed for the manager only; nobody else, a superuser neither,
    learns it exists."""
    ids, users = world
    client = APIClient()
    client.force_login(users[role])
    listed = [row["id"] for row in client.get("/api/tokens/").json()["results"]]
    assert (ids.manager_token_id in listed) == (role == "manager")
    page = Client()
    page.force_login(users[role])
    revoke_button = f'name="token" value="{ids.manager_token_id}"'
    assert (revoke_button in page.get("/account/tokens/").text) == (role == "manager")
