"""The codebook pages through the test client: who may edit, the editor's forms, publishing,
the diff, exports, moving a study, the re-check list, the labeling page's marks, proposals."""

import pytest
from django.urls import reverse

from labeling.models import Annotation, Assignment, ProposalDecision, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.codebook_migration import study_codebook_migrate
from taxonomy.drafts import (
    codebook_draft_create,
    codebook_draft_publish,
    draft_category_split,
    draft_category_update,
)
from taxonomy.models import Category, CategoryMapping, CodebookVersion
from tests.conftest import PASSWORD, SCREENED_IN


def login(client, username: str):
    assert client.login(username=username, password=PASSWORD)
    return client


def submit(item, user, **changes):
    return assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=user),
        user=user,
        answers={
            k: DimensionAnswer(category_keys=v) for k, v in {**SCREENED_IN, **changes}.items()
        },
        submit=True,
    )


def category(version, dimension, key):
    return Category.objects.get(dimension__version=version, dimension__key=dimension, key=key)


@pytest.fixture
def draft(codebook_version):
    return codebook_draft_create(version=codebook_version, label="0.2.0")


def test_who_may_edit(client, study, people, draft, make_user):
    make_user("root", is_superuser=True)
    url = reverse("codebook_edit", args=[draft.id])
    for username, expected in [
        ("manager", 200),
        ("root", 200),
        ("annotator1", 403),
        ("adjudicator", 403),
        ("outsider", 403),
    ]:
        client.logout()
        login(client, username)
        assert client.get(url).status_code == expected, username
        response = client.post(
            url,
            {"action": "category", "category": category(draft, "symptom", "hang").id, "name": "X"},
        )
        assert response.status_code in ((302,) if expected == 200 else (403,)), username
    client.logout()
    assert client.get(url).status_code == 302  # to the login page


def test_start_a_draft_edit_merge_and_publish_in_the_browser_forms(client, study, people):
    login(client, "manager")
    version = study.codebook_version
    response = client.post(reverse("codebook_draft_new", args=[version.id]), {"label": "0.2.0"})
    draft = CodebookVersion.objects.get(label="0.2.0")
    assert response.status_code == 302 and response.url == reverse("codebook_edit", args=[draft.id])
    page = client.get(response.url).content.decode()
    assert "Publish version 0.2.0" in page and "Merge in Root cause" in page
    edit = reverse("codebook_edit", args=[draft.id])
    root_cause = draft.dimensions.get(key="root_cause")
    response = client.post(
        edit,
        {
            "action": "merge",
            "dimension": root_cause.id,
            "sources": ["type_error"],
            "target": "typo_wrong_identifier",
        },
    )
    assert response.status_code == 302
    assert CategoryMapping.objects.get(to_version=draft).kind == "merge"
    hang = category(draft, "symptom", "hang")
    client.post(
        edit,
        {
            "action": "category",
            "category": hang.id,
            "key": "hang",
            "name": "Hang or stall",
            "definition": "Stops making progress.",
            "examples": "microsoft/DeepSpeed#1\n",
        },
    )
    hang.refresh_from_db()
    assert (hang.name, hang.examples, hang.deprecated) == (
        "Hang or stall",
        ["microsoft/DeepSpeed#1"],
        False,
    )
    # A bad change: a message, a 400, and nothing changed.
    response = client.post(
        edit,
        {
            "action": "move",
            "category": category(draft, "symptom", "crash").id,
            "parent": "crash_native",
        },
    )
    assert response.status_code == 400 and "cycle" in response.content.decode()
    assert category(draft, "symptom", "crash").parent is None
    response = client.post(edit, {"action": "publish", "confirm": "1"})
    assert response.status_code == 302
    draft.refresh_from_db()
    assert draft.is_published
    # Editing a published version: refused, nothing changed.
    response = client.post(
        edit, {"action": "category", "category": hang.id, "name": "Changed"}, follow=True
    )
    assert "is published and cannot change" in response.content.decode()
    hang.refresh_from_db()
    assert hang.name == "Hang or stall"


def test_the_diff_page_and_exports(client, study, draft):
    draft_category_update(category=category(draft, "symptom", "hang"), key="stall")
    login(client, "manager")
    page = client.get(
        reverse("codebook_diff") + f"?from={study.codebook_version_id}&to={draft.id}"
    ).content.decode()
    assert "Renamed <code>hang</code>" in page
    export = reverse("codebook_export", args=[draft.id])
    response = client.get(export + "?format=yaml")
    assert response["Content-Type"] == "application/yaml"
    disposition = response["Content-Disposition"]
    assert disposition.startswith('attachment; filename="') and disposition.endswith('-0.2.0.yaml"')
    markdown = client.get(export + "?format=markdown&study=demo").content.decode()
    assert "Counts: submitted labels and gold labels of the study Demo." in markdown
    client.logout()
    login(client, "annotator1")
    # Counts are for those who oversee the study.
    assert client.get(export + "?format=markdown&study=demo").status_code == 404
    assert client.get(export + "?format=pdf").status_code == 404


def test_moving_the_study_and_what_annotators_see(client, study, people, draft):
    first, second = people["annotator1"], people["annotator2"]
    item = study.items.order_by("id").first()
    submit(item, first, symptom=["hang"])
    submit(item, second, symptom=["crash"])
    draft_category_split(
        dimension=draft.dimensions.get(key="symptom"),
        source_key="hang",
        parts=[("deadlock", "Deadlock"), ("stall", "Stall")],
    )
    draft_category_update(category=category(draft, "symptom", "build_failure"), deprecated=True)
    codebook_draft_publish(version=draft)
    login(client, "manager")
    page = client.get(reverse("study_codebook", args=["demo"])).content.decode()
    assert "Move Demo to the new version" in page and "agreement-per-version" in page
    # The per-version agreement table names its dimensions, not their keys.
    table = page[page.index('id="agreement-per-version"') :]
    assert '<th scope="row">Symptom</th>' in table and '<th scope="row">symptom</th>' not in table
    response = client.post(
        reverse("study_codebook", args=["demo"]), {"version": draft.id}, follow=True
    )
    assert "1 labels and 0 gold labels to re-check" in response.content.decode()
    study.refresh_from_db()
    assert study.codebook_version == draft
    # Bad input: a draft or another codebook's version is a message, nothing changes.
    other = codebook_draft_create(version=draft, label="0.3.0")
    response = client.post(
        reverse("study_codebook", args=["demo"]), {"version": other.id}, follow=True
    )
    assert "is a draft" in response.content.decode()
    client.logout()
    login(client, "annotator1")
    assert client.get(reverse("study_codebook", args=["demo"])).status_code == 403
    recheck = client.get(reverse("study_recheck", args=["demo"])).content.decode()
    assert "split Hang (hang) into Deadlock (deadlock), Stall (stall)" in recheck
    assert StudyItem.objects.get(pk=item.pk).status == StudyItem.Status.IN_RESOLUTION
    label_page = client.get(reverse("label_item", args=["demo", item.id])).content.decode()
    assert "To re-check:" in label_page and "(your label: hang)" in label_page
    assert "This item went to resolution" not in label_page  # writable for the re-check
    assert 'data-key="build_failure" disabled' in label_page and "(deprecated)" in label_page
    client.post(
        reverse("label_item", args=["demo", item.id]),
        {
            "action": "submit",
            "dim-symptom": "stall",
            **{f"dim-{k}": v[0] for k, v in SCREENED_IN.items() if k != "symptom"},
        },
    )
    annotation = Annotation.objects.get(
        assignment__item=item, assignment__annotator=first, dimension__key="symptom"
    )
    assert [c.key for c in annotation.categories.all()] == ["stall"]
    assert annotation.needs_review_since is None
    assert (
        "Nothing of yours to re-check"
        in client.get(reverse("study_recheck", args=["demo"])).content.decode()
    )
    # The deprecated category is refused by the page's service too.
    later = study.items.order_by("id")[1]
    response = client.post(
        reverse("label_item", args=["demo", later.id]),
        {"action": "draft", "dim-symptom": "build_failure"},
    )
    assert response.status_code == 400 and "deprecated" in response.content.decode()


def test_proposals_page_maps_and_creates(client, study, people):
    first = people["annotator1"]
    item = study.items.order_by("id").first()
    assignment_save(
        assignment=Assignment.objects.get(item=item, annotator=first),
        user=first,
        answers={
            "root_cause": DimensionAnswer(category_keys=["numerical_error"], proposal="Silent NaN")
        },
        submit=False,
    )
    login(client, "manager")
    url = reverse("study_proposals", args=["demo"])
    page = client.get(url).content.decode()
    assert "Silent NaN" in page and str(item.issue) in page
    response = client.post(
        url,
        {
            "action": "map",
            "dimension": "root_cause",
            "text": "silent nan",
            "category": "numerical_error",
        },
    )
    assert response.status_code == 302
    assert ProposalDecision.objects.get().kind == "mapped"
    response = client.post(
        url,
        {
            "action": "create",
            "dimension": "root_cause",
            "text": "silent nan",
            "key": "silent_nan",
            "name": "Silent NaN",
            "parent": "numerical_error",
        },
    )
    assert response.status_code == 302
    decision = ProposalDecision.objects.get()
    assert decision.kind == "created" and decision.version.status == "draft"
    response = client.post(
        url, {"action": "map", "dimension": "root_cause", "text": "never", "category": "x"}
    )
    assert response.status_code == 400 and "Nobody proposed" in response.content.decode()
    client.logout()
    login(client, "annotator1")
    assert client.get(url).status_code == 403


def test_migrating_by_service_is_shown_in_the_history(client, study, people, draft):
    study_codebook_migrate(
        study=study, to_version=codebook_draft_publish(version=draft), by=people["manager"]
    )
    login(client, "manager")
    page = client.get(reverse("study_codebook", args=["demo"])).content.decode()
    assert "Versions moved through" in page and ">0.1.0</td><td>0.2.0<" in page


def test_the_codebook_list_reads_a_fixed_number_of_queries(client, study, draft):
    login(client, "manager")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as few:
        assert client.get(reverse("codebooks")).status_code == 200
    published = codebook_draft_publish(version=draft)
    for label in ("0.3.0", "0.4.0"):
        codebook_draft_create(version=published, label=label)
    with CaptureQueriesContext(connection) as more:
        page = client.get(reverse("codebooks")).content.decode()
    assert "Changes since 0.2.0" in page and "Edit draft 0.4.0" in page
    assert len(more) == len(few)
