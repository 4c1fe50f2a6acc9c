"""The admin never deletes label history: not an annotation or a revision, not a gold label, a
comment, an assignment, an item or a study (which would take their labels with them by a
cascade), nor a user who labeled."""

import pytest

from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    DiscussionComment,
    Resolution,
    ResolutionRevision,
    Study,
    StudyItem,
)
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.studies import item_next_for_annotator


@pytest.fixture
def labeled(study, people):
    assignment = item_next_for_annotator(study=study, user=people["annotator1"])
    assignment_save(
        assignment=assignment,
        user=people["annotator1"],
        answers={"symptom": DimensionAnswer(category_keys=["crash"])},
        submit=False,
    )
    dimension = study.codebook_version.dimensions.get(key="symptom")
    annotation = Annotation.objects.get(assignment=assignment, dimension=dimension)
    resolution = Resolution.objects.create(
        item=assignment.item, dimension=dimension, method="adjudicated"
    )
    ResolutionRevision.objects.create(resolution=resolution, changed_by=people["adjudicator"])
    DiscussionComment.objects.create(item=assignment.item, author=people["adjudicator"], body="hm")
    return {
        "study": study,
        "studyitem": assignment.item,
        "assignment": assignment,
        "annotation": annotation,
        "annotationrevision": annotation.revisions.first(),
        "resolution": resolution,
        "resolutionrevision": resolution.revisions.first(),
        "discussioncomment": DiscussionComment.objects.get(),
    }


@pytest.fixture
def superuser_client(client, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def history_count() -> tuple[int, ...]:
    return tuple(
        model.objects.count()
        for model in (
            Study,
            StudyItem,
            Assignment,
            Annotation,
            AnnotationRevision,
            Resolution,
            ResolutionRevision,
            DiscussionComment,
        )
    )


MODELS = [
    "study",
    "studyitem",
    "assignment",
    "annotation",
    "annotationrevision",
    "resolution",
    "resolutionrevision",
    "discussioncomment",
]


@pytest.mark.parametrize("model", MODELS)
def test_no_delete_page(superuser_client, labeled, model):
    before = history_count()
    url = f"/admin/labeling/{model}/{labeled[model].pk}/delete/"
    assert superuser_client.get(url).status_code == 403
    assert superuser_client.post(url, {"post": "yes"}).status_code == 403
    assert history_count() == before


@pytest.mark.parametrize("model", MODELS)
def test_no_delete_selected_action(superuser_client, labeled, model):
    before = history_count()
    listing = superuser_client.get(f"/admin/labeling/{model}/")
    assert listing.status_code == 200
    assert b"delete_selected" not in listing.content
    response = superuser_client.post(
        f"/admin/labeling/{model}/",
        {"action": "delete_selected", "_selected_action": [labeled[model].pk], "post": "yes"},
    )
    assert response.status_code in (200, 302)
    assert history_count() == before


def test_a_user_who_labeled_is_not_deleted(superuser_client, labeled, people):
    before = history_count()
    for name in ("annotator1", "adjudicator"):
        url = f"/admin/auth/user/{people[name].pk}/delete/"
        assert superuser_client.get(url).status_code == 403
        assert superuser_client.post(url, {"post": "yes"}).status_code == 403
    response = superuser_client.post(
        "/admin/auth/user/",
        {"action": "delete_selected", "_selected_action": [people["annotator1"].pk], "post": "yes"},
    )
    assert response.status_code in (200, 302)
    assert history_count() == before
    assert people["annotator1"].__class__.objects.filter(pk=people["annotator1"].pk).exists()


def test_a_user_without_labels_can_still_be_deleted(superuser_client, labeled, people):
    url = f"/admin/auth/user/{people['outsider'].pk}/delete/"
    assert superuser_client.post(url, {"post": "yes"}).status_code == 302
    assert not people["outsider"].__class__.objects.filter(pk=people["outsider"].pk).exists()
