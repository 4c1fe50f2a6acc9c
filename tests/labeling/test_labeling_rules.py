"""One rule for every way labels come in: the labeling page, the API and the import file refuse
the same bad input, and claiming an item is never a side effect of a GET."""

import re

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from common.exceptions import ApplicationError
from labeling.annotation_import import AnnotationFileError, annotation_rows_parse
from labeling.models import Annotation, Assignment
from labeling.services.annotations import (
    DimensionAnswer,
    MissingLabelsError,
    annotations_import,
    assignment_save,
)
from labeling.services.studies import study_create, study_member_add

PASSWORD = "a-long-test-password"
HEADER = "issue,annotator,dimension,labels,rationale\n"


def reference(issue) -> str:
    return f"{issue.repository.full_name}#{issue.number}"


def csv_of(*records: str) -> str:
    return HEADER + "".join(record + "\n" for record in records)


# The import file: the page's rules and physical line numbers


def test_import_refuses_an_empty_label_on_a_required_dimension(study, sample_issues, people):
    issue = reference(sample_issues[0])
    rows = annotation_rows_parse(
        csv_of(f"{issue},annotator1,screening,include,", f"{issue},annotator1,root_cause,,")
    )
    with pytest.raises(ApplicationError) as error:
        annotations_import(study=study, rows=rows)
    assert error.value.extra["errors"] == [(3, "root_cause is required and needs a category")]
    assert not Annotation.objects.exists()


def test_import_needs_no_label_where_the_screening_in_the_file_excludes_the_dimension(
    study, sample_issues, people
):
    issue = reference(sample_issues[0])
    rows = annotation_rows_parse(
        csv_of(f"{issue},annotator1,screening,not_a_bug,", f"{issue},annotator1,root_cause,,")
    )
    report = annotations_import(study=study, rows=rows)
    assert report.annotations_written == 2


def test_import_follows_the_study_s_required_dimensions(codebook_version, sample_issues, people):
    study = study_create(
        slug="own-rules",
        name="Own rules",
        codebook_version=codebook_version,
        required_dimensions=["screening", "test_escape_reason"],
        managers=[people["manager"]],
    )
    issue = reference(sample_issues[0])
    rows = annotation_rows_parse(
        csv_of(
            f"{issue},annotator1,screening,include,",
            f"{issue},annotator1,root_cause,,",  # required by the codebook, not by this study
            f"{issue},annotator1,test_escape_reason,,",  # required by this study only
        )
    )
    with pytest.raises(ApplicationError) as error:
        annotations_import(study=study, rows=rows)
    assert error.value.extra["errors"] == [
        (4, "test_escape_reason is required and needs a category")
    ]


def test_import_refuses_an_over_long_rationale(study, sample_issues, people):
    issue = reference(sample_issues[0])
    rows = annotation_rows_parse(csv_of(f"{issue},annotator1,screening,include,{'x' * 20_001}"))
    with pytest.raises(ApplicationError) as error:
        annotations_import(study=study, rows=rows)
    assert error.value.extra["errors"] == [
        (2, "rationale is 20,001 characters; the limit is 20,000")
    ]


def test_import_line_numbers_are_the_lines_where_records_start(
    study, sample_issues, people, tmp_path
):
    issue = reference(sample_issues[0])
    path = tmp_path / "labels.csv"
    path.write_text(
        csv_of(
            f'{issue},annotator1,screening,include,"first line\nsecond line\nthird line"',
            f"{issue},annotator1,mood,happy,",
        )
    )
    with pytest.raises(CommandError) as error:
        call_command("import_annotations", "--study", "demo", str(path))
    assert f"{path}:5: unknown dimension 'mood'" in str(error.value)
    # The rationale keeps its line breaks.
    rows = annotation_rows_parse(path.read_text())
    assert [row.line for row in rows] == [2, 5]
    assert rows[0].rationale == "first line\nsecond line\nthird line"


def test_import_file_errors_name_the_starting_line(sample_issues):
    issue = reference(sample_issues[0])
    with pytest.raises(AnnotationFileError) as error:
        annotation_rows_parse(
            csv_of(f'{issue},a,screening,include,"two\nlines"', "no reference,a,screening,,")
        )
    assert error.value.errors == [(4, "issue must be owner/name#number, got 'no reference'")]


# The service: one rule for the page and the API


def first_assignment(people) -> Assignment:
    return Assignment.objects.filter(annotator=people["annotator1"]).order_by("item_id").first()


def test_over_long_text_is_refused_not_cut(study, people):
    assignment = first_assignment(people)
    with pytest.raises(ApplicationError) as error:
        assignment_save(
            assignment=assignment,
            user=people["annotator1"],
            answers={"root_cause": DimensionAnswer(rationale="x" * 20_001)},
            submit=False,
        )
    assert "Root cause" in error.value.message and "20,001" in error.value.message
    assert error.value.extra == {
        "dimension": "root_cause",
        "field": "rationale",
        "max_length": 20_000,
    }
    assert not Annotation.objects.exists()
    saved = assignment_save(
        assignment=assignment,
        user=people["annotator1"],
        answers={"root_cause": DimensionAnswer(rationale="x" * 20_000)},
        submit=False,
    )
    assert len(saved.annotations.get().rationale) == 20_000


def test_submit_with_a_missing_dimension_keeps_the_choices_as_a_draft(study, people):
    assignment = first_assignment(people)
    with pytest.raises(MissingLabelsError) as error:
        assignment_save(
            assignment=assignment,
            user=people["annotator1"],
            answers={"screening": DimensionAnswer(category_keys=["include"])},
            submit=True,
            expected_version=assignment.version,
        )
    assert "Symptom" in error.value.extra["missing"]
    assignment.refresh_from_db()
    assert assignment.status == "draft"
    assert error.value.extra["version"] == assignment.version == 1
    screening = assignment.annotations.get(dimension__key="screening")
    assert [c.key for c in screening.categories.all()] == ["include"]
    assert screening.revisions.get().reason == "draft"


# The labeling page


@pytest.fixture
def annotator_client(client, study, people):
    client.login(username="annotator1", password=PASSWORD)
    return client


def open_item(client) -> tuple[str, str]:
    item_url = client.post("/studies/demo/next/").url
    html = client.get(item_url).content.decode()
    return item_url, re.search(r'name="version" value="(\d+)"', html).group(1)


@pytest.mark.parametrize("version", ["abc", "1.5", "-1", "0x1"])
def test_page_refuses_a_version_that_is_not_a_number(annotator_client, people, version):
    item_url, _ = open_item(annotator_client)
    response = annotator_client.post(
        item_url, {"version": version, "action": "draft", "dim-symptom": "crash"}
    )
    assert response.status_code == 400
    assert "version is not a whole number" in response.content.decode()
    assert not Annotation.objects.exists()


def test_page_refuses_over_long_text_naming_the_dimension(annotator_client, people):
    item_url, version = open_item(annotator_client)
    response = annotator_client.post(
        item_url,
        {"version": version, "action": "draft", "rationale-root_cause": "x" * 20_001},
    )
    assert response.status_code == 400
    assert "The rationale of Root cause is 20,001 characters long" in response.content.decode()
    assert not Annotation.objects.exists()


def test_page_counts_a_line_break_as_one_character_as_the_textarea_does(annotator_client, people):
    item_url, version = open_item(annotator_client)
    text = "x" * 9_999 + "\r\n" + "y" * 10_000  # 20,000 characters in the browser
    response = annotator_client.post(
        item_url, {"version": version, "action": "draft", "rationale-root_cause": text}
    )
    assert response.status_code == 302
    stored = Annotation.objects.get(dimension__key="root_cause")
    assert stored.rationale == text.replace("\r\n", "\n")


def test_page_refuses_an_unknown_action(annotator_client, people):
    item_url, version = open_item(annotator_client)
    response = annotator_client.post(
        item_url, {"version": version, "action": "publish", "dim-symptom": "crash"}
    )
    assert response.status_code == 400
    assert "Unknown action" in response.content.decode()
    assert not Annotation.objects.exists()
    assert not Assignment.objects.exclude(status="todo").exists()


def test_page_submit_with_a_missing_dimension_keeps_a_draft(annotator_client, people):
    item_url, version = open_item(annotator_client)
    response = annotator_client.post(
        item_url, {"version": version, "action": "submit", "dim-symptom": "crash"}
    )
    assert response.status_code == 400
    assert "Choose a category for" in response.content.decode()
    assignment = Assignment.objects.get(status="draft")
    symptom = assignment.annotations.get(dimension__key="symptom")
    assert [c.key for c in symptom.categories.all()] == ["crash"]


# Claiming the next item is a POST


@pytest.fixture
def unassigned_study(codebook_version, sample_issues, people):
    """A study whose items nobody holds yet: annotators claim them one by one."""
    study = study_create(
        slug="open",
        name="Open",
        codebook_version=codebook_version,
        k=1,
        managers=[people["manager"]],
        issues=sample_issues[:3],
    )
    study_member_add(study=study, user=people["annotator1"], role="annotator")
    return study


def test_get_next_claims_nothing_and_shows_the_button(client, unassigned_study, people):
    client.force_login(people["annotator1"])
    response = client.get("/studies/open/next/")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'method="post" action="/studies/open/next/"' in html
    assert "csrfmiddlewaretoken" in html
    assert not Assignment.objects.exists()


def test_next_is_claimed_by_a_post_with_its_csrf_token_only(client, unassigned_study, people):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(people["annotator1"])
    assert browser.post("/studies/open/next/").status_code == 403
    assert not Assignment.objects.exists()

    page = browser.get("/studies/open/next/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    claimed = browser.post("/studies/open/next/", {"csrfmiddlewaretoken": token})
    assignment = Assignment.objects.get()
    assert claimed.url == f"/studies/open/items/{assignment.item_id}/"
    # Held now: a GET opens it, and claims nothing more.
    assert browser.get("/studies/open/next/").url == claimed.url
    assert Assignment.objects.count() == 1


def test_submit_opens_the_next_item_directly(client, unassigned_study, people):
    client.force_login(people["annotator1"])
    item_url = client.post("/studies/open/next/").url
    page = client.get(item_url).content.decode()
    version = re.search(r'name="version" value="(\d+)"', page).group(1)
    response = client.post(
        item_url, {"version": version, "action": "submit", "dim-screening": "not_a_bug"}
    )
    assert response.status_code == 302
    assert re.fullmatch(r"/studies/open/items/\d+/", response.url)
    assert response.url != item_url
    assert Assignment.objects.filter(status="todo").count() == 1


def test_a_skip_reason_over_its_limit_is_refused_not_cut(study, people):
    from labeling.services.annotations import MAX_SKIP_REASON, assignment_skip
    from labeling.services.studies import item_next_for_annotator

    assignment = item_next_for_annotator(study=study, user=people["annotator1"])
    with pytest.raises(ApplicationError, match="at most 2000 characters"):
        assignment_skip(
            assignment=assignment, user=people["annotator1"], reason="x" * (MAX_SKIP_REASON + 1)
        )
    assignment.refresh_from_db()
    assert assignment.status != "skipped"
    skipped = assignment_skip(
        assignment=assignment, user=people["annotator1"], reason="y" * MAX_SKIP_REASON
    )
    assert skipped.skip_reason == "y" * MAX_SKIP_REASON
