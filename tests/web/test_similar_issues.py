"""The labeling page's similar issues: the nearest items of the study by TF-IDF cosine, a
near-copy flagged for screening, titles escaped, gold labels only where the study allows it and
never of an item the viewer still has to label, never anyone's own labels; the index kept in the
cache until the study's texts change."""

import re

import pytest
from django.core.cache import cache
from django.test import Client

from corpus.models import Issue, IssueComment
from labeling.models import Assignment, Study
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.resolutions import item_tiebreaker_request
from labeling.services.studies import study_member_add
from machines import similar_panel
from machines.similar import neighbours_of
from machines.similar_panel import DUPLICATE_SCORE, item_similar_issues, study_neighbours
from machines.tasks import similar_index_task
from tests.conftest import SCREENED_IN

PAGE_TEXT = "deepspeed zero stage three checkpoint save hangs forever on rank zero"
COPY_TEXT = PAGE_TEXT + " <i>please</i>"
RELATED_TEXT = "checkpoint save hangs in deepspeed"
OPEN_TEXT = "zero stage three checkpoint optimizer state"


def _noise(index: int) -> str:
    return "solo" + "".join(chr(ord("a") + int(digit)) for digit in f"{index:03d}")


def _submit(item, user, root_cause: str) -> None:
    assignment = Assignment.objects.get(item=item, annotator=user)
    answers = {**SCREENED_IN, "root_cause": [root_cause]}
    assignment_save(
        assignment=assignment,
        user=user,
        answers={key: DimensionAnswer(category_keys=keys) for key, keys in answers.items()},
        submit=True,
    )


@pytest.fixture
def similar_study(study, people, make_user):
    """items[0]: the page; [1]: a near-copy, gold by consensus; [2]: related, in resolution
    (screening gold, root cause disputed) with a tie-breaker for annotator3; [3]: related,
    labeled by annotator2 only; the rest share no word with anything."""
    items = list(study.items.select_related("issue").order_by("id"))
    IssueComment.objects.filter(issue__study_items__study=study).delete()
    texts = [PAGE_TEXT, COPY_TEXT, RELATED_TEXT, OPEN_TEXT]
    for index, item in enumerate(items):
        text = texts[index] if index < len(texts) else _noise(index)
        Issue.objects.filter(pk=item.issue_id).update(title=text, body="")
    one, two = people["annotator1"], people["annotator2"]
    _submit(items[1], one, "api_misuse")
    _submit(items[1], two, "api_misuse")
    _submit(items[2], one, "api_misuse")
    _submit(items[2], two, "configuration_error")
    _submit(items[3], two, "numerical_error")
    third = make_user("annotator3")
    study_member_add(study=study, user=third, role="annotator")
    item_tiebreaker_request(item=items[2], user=people["manager"], annotator=third)
    return study, items


def _panel(user, study, item) -> str:
    client = Client()
    client.force_login(user)
    response = client.get(f"/studies/{study.slug}/items/{item.pk}/")
    assert response.status_code == 200
    found = re.search(r'<section class="similar-issues".*?</section>', response.text, re.S)
    return found.group(0) if found else ""


def _allow_gold(study) -> None:
    Study.objects.filter(pk=study.pk).update(show_similar_gold=True)
    study.refresh_from_db()


def test_the_page_lists_the_nearest_issues_with_a_near_copy_flagged(similar_study, people):
    study, items = similar_study
    panel = _panel(people["annotator1"], study, items[0])
    references = re.findall(r"#(\d+)</a>", panel)
    expected = [str(items[i].issue.number) for i in (1, 2, 3)]
    assert references == expected  # the unrelated items share no word: not listed
    assert panel.count("possible duplicate") == 1  # the near-copy only
    # The title is text, never markup.
    assert "&lt;i&gt;please&lt;/i&gt;" in panel and "<i>" not in panel
    # Gold is not shown unless the study allows it.
    assert "Gold labels" not in panel and "chip" not in panel


def test_gold_labels_only_where_the_study_allows_and_never_peoples_labels(similar_study, people):
    study, items = similar_study
    _allow_gold(study)
    panel = _panel(people["annotator1"], study, items[0])
    assert "Gold labels" in panel
    rows = re.findall(r"<tr>.*?</tr>", panel.split("<tbody>")[1], re.S)
    copy, related, open_item = rows
    assert "API Misuse" in copy  # consensus gold of the near-copy
    # In resolution: its screening is gold, the disputed root cause is not shown.
    assert "Include" in related and "API Misuse" not in related
    assert "Configuration Error" not in related
    # Labeled by annotator2 only: no gold, and annotator2's label never shows.
    assert "no gold label" in open_item and "Numerical" not in open_item


def test_no_gold_of_an_item_the_viewer_still_has_to_label(similar_study, people):
    study, items = similar_study
    _allow_gold(study)
    third = people["annotator1"].__class__.objects.get(username="annotator3")
    assert Assignment.objects.filter(item=items[2], annotator=third, status="todo").exists()
    shown = {
        similar.item_id: similar.gold
        for similar in item_similar_issues(study=study, item=items[0], user=third)
    }
    assert shown[items[2].pk] == []  # its tie-breaker: the answer would come first
    assert shown[items[1].pk]  # an item not theirs: its gold shows
    mine = item_similar_issues(study=study, item=items[0], user=people["annotator1"])
    assert next(s.gold for s in mine if s.item_id == items[2].pk)


def test_the_index_is_kept_until_the_texts_change(similar_study, django_assert_num_queries):
    study, items = similar_study
    first = study_neighbours(study=study)
    with django_assert_num_queries(0):  # the state of the texts and the table from the cache
        assert study_neighbours(study=study) == first
    assert [other for other, _ in first[items[0].pk]][:1] == [items[1].pk]
    issue = Issue.objects.get(pk=items[5].issue_id)
    issue.title = PAGE_TEXT  # now an exact copy of the page's issue
    issue.save()
    assert items[5].pk not in dict(first[items[0].pk])
    assert study_neighbours(study=study) == first  # the state is trusted for STATE_SECONDS
    cache.delete(similar_panel.state_cache_key(study.pk))  # STATE_SECONDS later
    changed = dict(study_neighbours(study=study)[items[0].pk])
    assert changed[items[5].pk] == pytest.approx(1.0)


def test_a_large_study_computes_its_index_in_the_background(similar_study, monkeypatch):
    """Above INLINE_MAX_ITEMS a page never computes the index: it queues the task once per
    state of the texts and serves the latest index meanwhile."""
    from config.celery import app as celery_app

    study, items = similar_study
    monkeypatch.setattr(similar_panel, "INLINE_MAX_ITEMS", 10)
    queued: list[int] = []
    monkeypatch.setattr(similar_index_task, "delay", lambda study_id: queued.append(study_id))
    cache.clear()
    assert study_neighbours(study=study) == {}  # nothing yet: no index is computed in the page
    assert study_neighbours(study=study) == {}
    assert queued == [study.pk]  # once, however many pages ask

    # The worker's computation, as the task runs it.
    monkeypatch.undo()
    monkeypatch.setattr(similar_panel, "INLINE_MAX_ITEMS", 10)
    before = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        assert similar_index_task.delay(study.pk).get() == len(items)
    finally:
        celery_app.conf.task_always_eager = before
    first = study_neighbours(study=study)
    assert [other for other, _ in first[items[0].pk]][:1] == [items[1].pk]

    # The texts change: the latest index is served while the new one is queued.
    issue = Issue.objects.get(pk=items[5].issue_id)
    issue.title = PAGE_TEXT
    issue.save()
    cache.delete(similar_panel.state_cache_key(study.pk))  # STATE_SECONDS later
    monkeypatch.setattr(similar_index_task, "delay", lambda study_id: queued.append(study_id))
    assert study_neighbours(study=study) == first
    assert queued == [study.pk, study.pk]


def test_neighbours_of_plain_texts():
    found = neighbours_of(["red apple pie", "red apple tart", "blue sky", ""], top=2)
    assert [other for other, _ in found[0]] == [1]
    assert found[0][0][1] < 1.0 and found[0][0][1] > 0
    assert found[2] == [] and found[3] == []
    assert neighbours_of(["only one"]) == [[]]
    assert neighbours_of(["the", "and"]) == [[], []]  # stop words only
    assert DUPLICATE_SCORE == 0.8
