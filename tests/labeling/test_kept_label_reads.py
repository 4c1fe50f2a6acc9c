"""The labeling loop's reads kept compiled (common.prepared) give what the ORM's prefetching
gives: an assignment's labels (the page, its saves, the API's item) and an issue with its
thread (the API's item)."""

import pytest
from django.db.models import Prefetch

from api.assignments import LABELS_PREFETCH
from corpus.models import Issue, IssueComment, LinkedFix
from corpus.selectors import issue_get_with_thread
from labeling.models import Annotation, Assignment
from labeling.selectors import assignment_annotations, assignment_labels_carry
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import Category

ANSWERS = {
    "symptom": DimensionAnswer(category_keys=["hang"], rationale="stuck at step 0"),
    # Chosen out of their order in the codebook: shown in it.
    "debugging_practice": DimensionAnswer(
        category_keys=["version_bisection", "error_message_analysis", "reproduction_minimization"]
    ),
    "parallel_feature": DimensionAnswer(category_keys=["pipeline_parallel"], unsure=True),
    "root_cause": DimensionAnswer(rationale="no category yet"),
}


def _labeled(study, user) -> Assignment:
    assignment = item_next_for_annotator(study=study, user=user)
    return assignment_save(assignment=assignment, user=user, answers=ANSWERS, submit=False)


def _shown(annotations) -> list[tuple]:
    return [
        (a.pk, a.dimension.key, [c.key for c in a.categories.all()], a.unsure, a.rationale)
        for a in annotations
    ]


def test_an_assignments_labels_are_carried_as_the_prefetch_carries_them(
    study, people, codebook_version, django_assert_num_queries
):
    user = people["annotator1"]
    saved = _labeled(study, user)
    _labeled(study, people["annotator2"])  # another annotator's labels stay out
    assignment = Assignment.objects.get(pk=saved.pk)
    with django_assert_num_queries(1):  # the version's categories kept by the saves
        assignment_labels_carry(assignment=assignment, version=codebook_version)
    orms = Assignment.objects.prefetch_related(LABELS_PREFETCH).get(pk=saved.pk)
    with django_assert_num_queries(0):
        ours = _shown(assignment.annotations.all())
        assert assignment.annotations.count() == len(ours) == 4
    assert ours == _shown(orms.annotations.all())
    chosen = {key: categories for _, key, categories, *_ in ours}
    assert chosen["debugging_practice"] == [
        "error_message_analysis",
        "reproduction_minimization",
        "version_bisection",
    ]
    assert [key for _, key, *_ in ours] == [a.dimension.key for a in orms.annotations.all()]


def test_an_assignment_never_saved_carries_no_labels_and_reads_none(
    study, people, codebook_version, django_assert_num_queries
):
    assignment = item_next_for_annotator(study=study, user=people["annotator1"])
    with django_assert_num_queries(0):
        assignment_labels_carry(assignment=assignment, version=codebook_version)
        assert list(assignment.annotations.all()) == []
        assert assignment_annotations(assignment=assignment, version=codebook_version) == {}


def test_the_saves_read_of_labels_gives_each_dimensions_categories(
    study, people, codebook_version, django_assert_num_queries
):
    saved = _labeled(study, people["annotator1"])
    with django_assert_num_queries(1):
        ours = assignment_annotations(assignment=saved, version=codebook_version)
    orms = {
        a.dimension_id: a
        for a in Annotation.objects.filter(assignment=saved).prefetch_related(
            Prefetch("categories", queryset=Category.objects.all())
        )
    }
    assert ours.keys() == orms.keys()
    with django_assert_num_queries(0):
        for dimension_id, annotation in ours.items():
            assert annotation.pk == orms[dimension_id].pk
            assert {c.pk for c in annotation.categories.all()} == {
                c.pk for c in orms[dimension_id].categories.all()
            }
    # Saved again, with the labels read this way: only the changed dimension is a revision.
    answers = {**ANSWERS, "symptom": DimensionAnswer(category_keys=["crash"])}
    again = assignment_save(
        assignment=saved, user=people["annotator1"], answers=answers, submit=False
    )
    changed = Annotation.objects.get(assignment=again, dimension__key="symptom")
    assert [c.key for c in changed.categories.all()] == ["crash"]
    assert changed.revisions.count() == 2
    unchanged = Annotation.objects.get(assignment=again, dimension__key="debugging_practice")
    assert unchanged.revisions.count() == 1


def _category_of_another_version() -> Category:
    """A category "x" of a symptom dimension in another published codebook version, as a
    codebook change leaves one on a label until it is re-checked or decided again."""
    from taxonomy.services import codebook_load

    other_version, _ = codebook_load(
        data={
            "name": "another",
            "dimensions": [
                {"key": "symptom", "name": "Symptom", "categories": [{"key": "x", "name": "X"}]}
            ],
        },
        publish=True,
    )
    return Category.objects.get(dimension__version=other_version, key="x")


def test_a_label_left_with_a_category_of_another_version_carries_it(
    study, people, codebook_version, django_assert_num_queries
):
    """A codebook change leaves a label's category of the earlier version until it is
    re-checked: read besides the kept version's."""
    saved = _labeled(study, people["annotator1"])
    flagged = Annotation.objects.get(assignment=saved, dimension__key="symptom")
    flagged.categories.add(_category_of_another_version())
    with django_assert_num_queries(2):
        assignment_labels_carry(assignment=saved, version=codebook_version)
    chosen = {a.dimension.key: [c.key for c in a.categories.all()] for a in saved.annotations.all()}
    assert sorted(chosen["symptom"]) == ["hang", "x"]
    assert chosen["root_cause"] == []


def test_an_issue_comes_with_its_thread_as_the_prefetch_gives_it(
    sample_issues, django_assert_num_queries
):
    issue = max(sample_issues, key=lambda i: i.comments.count())
    IssueComment.objects.create(
        issue=issue,
        github_id=1,  # the lowest id, at the same time as the first: ordered by time, then id
        body="**the source**",
        body_html="<p><strong>the source</strong></p>",
        created_at=issue.comments.earliest("created_at").created_at,
        updated_at=issue.created_at,
    )
    for ref in ("b" * 40, "a" * 40):
        LinkedFix.objects.create(issue=issue, kind="commit", ref=ref, url=f"https://x/{ref}")
    with django_assert_num_queries(3):
        ours = issue_get_with_thread(issue_id=issue.pk)
    orms = (
        Issue.objects.select_related("repository")
        .prefetch_related("comments", "linked_fixes")
        .get(pk=issue.pk)
    )
    with django_assert_num_queries(0):
        assert ours.repository.full_name == orms.repository.full_name
        comments = [(c.pk, c.github_id, c.body, c.body_html) for c in ours.comments.all()]
        fixes = [(f.pk, f.kind, f.ref) for f in ours.linked_fixes.all()]
    assert comments == [(c.pk, c.github_id, c.body, c.body_html) for c in orms.comments.all()]
    assert len(comments) >= 2 and "**the source**" in [body for _, _, body, _ in comments]
    assert fixes == [(f.pk, f.kind, f.ref) for f in orms.linked_fixes.all()]
    assert [ref for _, kind, ref in fixes if kind == "commit"][:2] == ["a" * 40, "b" * 40]


def test_an_issue_not_there_is_does_not_exist_as_with_get(db):
    with pytest.raises(Issue.DoesNotExist):
        issue_get_with_thread(issue_id=987_654)


SUBMITTED = {
    "screening": DimensionAnswer(category_keys=["include"]),
    "symptom": DimensionAnswer(category_keys=["crash"]),
    "root_cause": DimensionAnswer(category_keys=["api_misuse"]),
    "fix_pattern": DimensionAnswer(category_keys=["fix_api_usage"]),
    "training_stage": DimensionAnswer(category_keys=["installation_build"]),
    "debugging_practice": DimensionAnswer(
        category_keys=["version_bisection", "error_message_analysis"]
    ),
}


def _item_both_submitted(study, people):
    """An item both annotators submitted with the same answers: its consensus gold labels."""
    first = item_next_for_annotator(study=study, user=people["annotator1"])
    for name in ("annotator1", "annotator2"):
        assignment = Assignment.objects.get(item=first.item, annotator=people[name])
        assignment_save(assignment=assignment, user=people[name], answers=SUBMITTED, submit=True)
    return first.item


def test_an_items_gold_labels_are_read_in_one_query_as_the_prefetch_gives_them(
    study, people, codebook_version, django_assert_num_queries
):
    from labeling.disagreements import item_gold_list
    from labeling.models import Resolution

    item = _item_both_submitted(study, people)
    item_gold_list(item=item, version=codebook_version)  # the version's categories kept
    with django_assert_num_queries(1):
        item_gold_list(item=item, version=codebook_version)
    # A category of another version, as a codebook change leaves one to be decided again: read
    # besides.
    flagged = Resolution.objects.get(item=item, dimension__key="symptom")
    flagged.categories.add(_category_of_another_version())
    orms = list(
        Resolution.objects.filter(item=item)
        .select_related("dimension", "decided_by")
        .prefetch_related("categories")
        .order_by("dimension__position")
    )
    with django_assert_num_queries(2):
        gold = item_gold_list(item=item, version=codebook_version)

    def shown(resolutions):
        return [
            (r.pk, r.dimension.key, r.method, [c.key for c in r.categories.all()])
            for r in resolutions
        ]

    with django_assert_num_queries(0):
        ours = shown(gold)
    # The same labels; within the codebook's version in the codebook's order (below), the one
    # left from another version after or before them.
    assert [(*row[:3], sorted(row[3])) for row in ours] == [
        (*row[:3], sorted(row[3])) for row in shown(orms)
    ]
    by_dimension = {key: keys for _, key, _, keys in ours}
    assert by_dimension["debugging_practice"] == ["error_message_analysis", "version_bisection"]
    assert sorted(by_dimension["symptom"]) == ["crash", "x"]
    assert any(keys == [] for keys in by_dimension.values())  # "none applies" is a gold label


def test_the_page_of_a_submitted_item_shows_its_outcome_in_twelve_queries(
    study, people, client, django_assert_max_num_queries
):
    item = _item_both_submitted(study, people)
    client.force_login(people["annotator1"])
    client.get(f"/studies/demo/items/{item.pk}/")  # the codebook's trees kept
    with django_assert_max_num_queries(12):
        page = client.get(f"/studies/demo/items/{item.pk}/")
    html = page.content.decode()
    assert page.status_code == 200 and "Outcome of this item" in html
    assert html.count('class="chip gold-chip"') == 7  # two on debugging practice
    assert "none applies" in html
