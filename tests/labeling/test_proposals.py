"""Open coding: proposals collected per dimension with counts and examples, mapped to an
existing category or created in a draft (both ways), and what is refused."""

import pytest

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.models import Annotation, Assignment, ProposalDecision
from labeling.proposals import proposal_create_category, proposal_map, study_proposals
from labeling.services.annotations import DimensionAnswer, assignment_save
from taxonomy.models import Category, CodebookVersion
from tests.conftest import SCREENED_IN


def propose(item, user, dimension, text):
    assignment = Assignment.objects.get(item=item, annotator=user)
    answers = {key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()}
    answers[dimension].proposal = text
    assignment_save(assignment=assignment, user=user, answers=answers, submit=False)


@pytest.fixture
def proposed(study, people):
    first, second = people["annotator1"], people["annotator2"]
    a, b, c = study.items.order_by("id")[:3]
    propose(a, first, "root_cause", "Silent NaN")
    propose(b, first, "root_cause", "silent  nan")
    propose(a, second, "root_cause", "Silent NaN")
    propose(c, second, "root_cause", "checkpoint format")
    propose(c, first, "symptom", "Slow start")
    return a, b, c


def test_proposals_are_grouped_per_dimension_with_counts_and_examples(study, proposed):
    a, b, _ = proposed
    dimensions = study_proposals(study=study)
    assert [(key, [g.text for g in groups]) for key, _, groups in dimensions] == [
        ("symptom", ["slow start"]),
        ("root_cause", ["silent nan", "checkpoint format"]),
    ]
    silent = dimensions[1][2][0]
    assert (silent.count, silent.annotators, silent.label) == (3, 2, "Silent NaN")
    assert [e.item_id for e in silent.examples] == [a.id, b.id]
    issue = a.issue
    assert silent.examples[0].reference == f"{issue.repository.full_name}#{issue.number}"
    assert silent.examples[0].url == issue.html_url
    assert silent.decision is None


def test_a_proposal_mapped_to_an_existing_category(study, people, proposed):
    decision = proposal_map(
        study=study,
        dimension_key="root_cause",
        text="SILENT nan",
        category_key="numerical_error",
        by=people["manager"],
    )
    assert (decision.kind, decision.category_key) == ("mapped", "numerical_error")
    group = study_proposals(study=study)[1][2][0]
    assert group.decision == decision
    # The annotators' labels are not touched.
    assert not Annotation.objects.filter(categories__key="numerical_error").exists()
    # Deciding again replaces the decision.
    proposal_map(
        study=study,
        dimension_key="root_cause",
        text="silent nan",
        category_key="incorrect_implementation",
        by=people["manager"],
    )
    assert ProposalDecision.objects.get().category_key == "incorrect_implementation"


def test_a_proposal_created_in_a_new_draft_then_in_the_same_draft(study, people, proposed):
    a, b, _ = proposed
    decision = proposal_create_category(
        study=study,
        dimension_key="root_cause",
        text="silent nan",
        key="silent_nan",
        name="Silent NaN",
        by=people["manager"],
        parent_key="numerical_error",
    )
    draft = decision.version
    assert draft.status == CodebookVersion.Status.DRAFT
    assert draft.based_on == study.codebook_version and draft.label == "0.1.1"
    created = Category.objects.get(dimension__version=draft, key="silent_nan")
    assert created.parent.key == "numerical_error"
    assert created.definition == "Proposed by annotators: Silent NaN"
    assert created.examples == [str(a.issue), str(b.issue)]
    second = proposal_create_category(
        study=study,
        dimension_key="root_cause",
        text="checkpoint format",
        key="checkpoint_format",
        name="Checkpoint format",
        by=people["manager"],
    )
    assert second.version == draft
    assert CodebookVersion.objects.filter(status="draft").count() == 1
    assert study.codebook_version.is_published  # the study labels on as before


def test_bad_decisions_are_refused(study, people, proposed):
    cases = [
        (dict(text="never said", category_key="numerical_error"), ApplicationError, "Nobody"),
        (dict(text="silent nan", category_key="nowhere"), ApplicationError, "not a category"),
    ]
    for arguments, error, message in cases:
        with pytest.raises(error, match=message):
            proposal_map(study=study, dimension_key="root_cause", by=people["manager"], **arguments)
    for user in ("annotator1", "adjudicator", "outsider"):
        with pytest.raises(PermissionDeniedError):
            proposal_map(
                study=study,
                dimension_key="root_cause",
                text="silent nan",
                category_key="numerical_error",
                by=people[user],
            )
    with pytest.raises(ApplicationError, match="has a category 'numerical_error' already"):
        proposal_create_category(
            study=study,
            dimension_key="root_cause",
            text="silent nan",
            key="numerical_error",
            name="Dup",
            by=people["manager"],
        )
    assert not ProposalDecision.objects.exists()
    # The refused creation left no draft behind (one transaction).
    assert not CodebookVersion.objects.filter(status="draft").exists()
