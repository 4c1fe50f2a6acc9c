"""Reads: what a user may see, their queue, the labeling page's data."""

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, Exists, OuterRef, Prefetch, Q, QuerySet
from django.http import Http404

from corpus.models import Issue, IssueComment, LinkedFix
from labeling.models import Annotation, Assignment, Membership, Study, StudyItem
from taxonomy.models import Dimension
from taxonomy.selectors import dimensions_of_version


def study_roles(*, study: Study, user: AbstractBaseUser) -> set[str]:
    """The roles of a user in a study; a superuser is a manager everywhere."""
    roles = set(Membership.objects.filter(study=study, user=user).values_list("role", flat=True))
    if user.is_superuser:
        roles.add(Membership.Role.MANAGER)
    return roles


def study_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Study]:
    studies = Study.objects.select_related("codebook_version__codebook")
    if not user.is_superuser:
        studies = studies.filter(memberships__user=user).distinct()
    return studies.annotate(n_items=Count("items", distinct=True)).order_by("-created_at")


def study_get_for_user(*, slug: str, user: AbstractBaseUser) -> tuple[Study, set[str]]:
    """The study and the user's roles in it; 404 for non-members, so that slugs don't leak."""
    # The roles come with the study in one query: every page of a study starts here.
    memberships = Membership.objects.filter(study=OuterRef("pk"), user_id=user.pk)
    study = (
        Study.objects.select_related("codebook_version__codebook")
        .annotate(
            **{
                f"is_{role}": Exists(memberships.filter(role=role))
                for role in Membership.Role.values
            }
        )
        .filter(slug=slug)
        .first()
    )
    if study is None:
        raise Http404("No such study.")
    roles = {role for role in Membership.Role.values if getattr(study, f"is_{role}")}
    if user.is_superuser:
        roles.add(Membership.Role.MANAGER)
    if not roles:
        raise Http404("No such study.")
    return study, roles


@dataclass
class QueueProgress:
    total: int
    done: int
    drafts: int
    todo: int
    skipped: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


QUEUE_FILTERS = {
    "todo": [Assignment.Status.TODO],
    "drafts": [Assignment.Status.DRAFT],
    "done": [Assignment.Status.SUBMITTED],
    "skipped": [Assignment.Status.SKIPPED],
}


def queue_for_annotator(
    *, study: Study, user: AbstractBaseUser, status_filter: str | None = None
) -> QuerySet[Assignment]:
    assignments = Assignment.objects.filter(item__study=study, annotator=user).select_related(
        "item__issue__repository"
    )
    if status_filter in QUEUE_FILTERS:
        assignments = assignments.filter(status__in=QUEUE_FILTERS[status_filter])
    return assignments.order_by("item_id")


def queue_progress(*, study: Study, user: AbstractBaseUser) -> QueueProgress:
    counts = Assignment.objects.filter(item__study=study, annotator=user).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        drafts=Count("id", filter=Q(status=Assignment.Status.DRAFT)),
        todo=Count("id", filter=Q(status=Assignment.Status.TODO)),
        skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
    )
    return QueueProgress(**counts)


def assignment_get_for_annotator(
    *, study: Study, item_id: int, user: AbstractBaseUser
) -> Assignment:
    """The user's own assignment of an item; 404 otherwise (blind: no peeking at others')."""
    assignment = (
        Assignment.objects.select_related("item__issue__repository", "item__round")
        .filter(item__study=study, item_id=item_id, annotator=user)
        .first()
    )
    if assignment is None:
        raise Http404("This item is not in your queue.")
    return assignment


@dataclass
class LabelingPage:
    assignment: Assignment
    issue: Issue
    fixes: list[LinkedFix]
    comments: list[IssueComment]
    dimensions: list[Dimension]
    annotations: dict[int, Annotation]  # by dimension id; only the annotator's own


def labeling_page(*, assignment: Assignment, study: Study) -> LabelingPage:
    """Everything the labeling page shows, in a fixed number of queries."""
    issue = assignment.item.issue  # fetched with the assignment
    fixes = list(LinkedFix.objects.filter(issue=issue).order_by("kind", "ref"))
    comments = list(IssueComment.objects.filter(issue=issue).order_by("created_at", "github_id"))
    # Categories are not loaded: the page takes each dimension's tree from the cache.
    dimensions = dimensions_of_version(version=study.codebook_version)
    annotations = {
        a.dimension_id: a
        for a in Annotation.objects.filter(assignment=assignment).prefetch_related(
            Prefetch("categories")
        )
    }
    return LabelingPage(
        assignment=assignment,
        issue=issue,
        fixes=fixes,
        comments=comments,
        dimensions=dimensions,
        annotations=annotations,
    )


def study_overview_counts(*, study: Study) -> dict[str, int]:
    return StudyItem.objects.filter(study=study).aggregate(
        items=Count("id"),
        resolved=Count("id", filter=Q(status=StudyItem.Status.RESOLVED)),
        changed_upstream=Count("id", filter=Q(changed_upstream_at__isnull=False)),
    )
