"""What the study pages show a member, over the API: the overview (your roles, the study's counts,
your progress), your queue, and one item as the labeling page shows it. Thin: the reads are the
pages' own selectors (labeling.selectors), who may see what is labeling.access.

The routes sit under /api/studies/{slug}/ beside StudyViewSet's, looking the study up the same
way (labeling.selectors.study_list_for_user): a study the user may not see is a 404.
"""

from dataclasses import dataclass

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.assignments import (
    ROW_FIELDS,
    AssignmentSerializer,
    rows_with_labels,
)
from api.pagination import UncountedPagination
from api.permissions import IsStudyMember, StudyLookup
from api.resolutions import ERRORS, _item_id
from api.serializers import IssueDetailSerializer, StudySerializer
from api.upstream_changes import UpstreamChangeSerializer
from corpus.models import Issue
from corpus.selectors import issue_get_with_thread
from labeling.access import assignment_get_for_annotator, study_can_label, study_roles
from labeling.models import Assignment, StudyItem
from labeling.pilot_gate import study_round_ids_held_back
from labeling.selectors import (
    QUEUE_FILTERS,
    QueueProgress,
    assignment_dimensions,
    assignment_labels_carry,
    queue_for_annotator,
    queue_progress,
    study_overview_counts,
)
from labeling.upstream_changes import UpstreamDiff, item_upstream_change_for_annotator
from taxonomy.models import Dimension

MEMBERS = [IsAuthenticated, IsStudyMember]
ITEM_ID = OpenApiParameter("item_id", OpenApiTypes.INT, OpenApiParameter.PATH)


class QueueProgressSerializer(serializers.Serializer):
    total = serializers.IntegerField(help_text="your assignments in the study")
    done = serializers.IntegerField(help_text="submitted")
    drafts = serializers.IntegerField()
    todo = serializers.IntegerField()
    skipped = serializers.IntegerField()
    percent = serializers.IntegerField(help_text="done of total, rounded")


class StudyCountsSerializer(serializers.Serializer):
    items = serializers.IntegerField()
    in_resolution = serializers.IntegerField()
    resolved = serializers.IntegerField()
    changed_upstream = serializers.IntegerField(help_text="labeled items whose issue changed since")


class OverviewSerializer(serializers.Serializer):
    study = StudySerializer()
    roles = serializers.ListField(child=serializers.CharField(), help_text="your roles in it")
    counts = StudyCountsSerializer()
    progress = QueueProgressSerializer(
        allow_null=True, help_text="your own labeling; null when you do not annotate it"
    )


class QueueQuerySerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=list(QUEUE_FILTERS), required=False, help_text="as the queue page's filters"
    )
    page = serializers.IntegerField(required=False, min_value=1)
    page_size = serializers.IntegerField(required=False, min_value=1)


class QueuePageSerializer(serializers.Serializer):
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    progress = QueueProgressSerializer()
    results = AssignmentSerializer(many=True)


class LabelingDimensionSerializer(serializers.ModelSerializer):
    """A dimension as the study asks it (`required` as the study says); its categories are in
    the codebook version (GET /api/codebook-versions/{id}/)."""

    applies_when = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="dimension key -> categories of which one must be chosen for this one to apply",
    )

    class Meta:
        model = Dimension
        fields = ["key", "name", "multi_label", "required", "ordinal", "applies_when"]
        read_only_fields = fields


@dataclass(frozen=True)
class LabelingItem:
    assignment: Assignment
    issue: Issue
    codebook_version: int
    dimensions: list[Dimension]
    locked: bool
    upstream_change: UpstreamDiff | None


class LabelingItemSerializer(serializers.Serializer):
    """One item of your queue as the labeling page shows it."""

    assignment = AssignmentSerializer(help_text="yours, with your labels")
    issue = IssueDetailSerializer(help_text="the issue with its thread and fixes")
    codebook_version = serializers.IntegerField(help_text="the study's codebook version id")
    dimensions = LabelingDimensionSerializer(many=True)
    locked = serializers.BooleanField(
        help_text="submitted and in resolution: your labels no longer change"
    )
    upstream_change = UpstreamChangeSerializer(
        allow_null=True,
        help_text="what changed on GitHub since you labeled the item: check your labels and "
        "submit them again; null when nothing did",
    )


def _progress(progress: QueueProgress) -> dict:
    return {**vars(progress), "percent": progress.percent}


class StudyQueueViewSet(StudyLookup, viewsets.GenericViewSet):
    """Member routes of a study: its overview, your queue, an item to label."""

    serializer_class = StudySerializer
    permission_classes = MEMBERS
    pagination_class = UncountedPagination  # the queue's `progress` counts it

    @extend_schema(
        responses={200: OverviewSerializer, 404: ERRORS[404]},
        description=(
            "The study's overview page: the study, your roles in it, how many items it has, "
            "wait in resolution, are resolved and changed upstream, and your own progress when "
            "you annotate it. The dashboard (GET …/dashboard/) has the rest, for managers and "
            "adjudicators."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=MEMBERS)
    def overview(self, request, slug=None):
        study = self.get_object()
        roles = study_roles(study=study, user=request.user)
        overview = {
            "study": study,
            "roles": sorted(roles),
            "counts": study_overview_counts(study=study),
            "progress": _progress(queue_progress(study=study, user=request.user))
            if study_can_label(roles=roles)
            else None,
        }
        return Response(OverviewSerializer(overview).data)

    @extend_schema(
        parameters=[QueueQuerySerializer],
        responses={200: QueuePageSerializer, 400: ERRORS[400], 404: ERRORS[404]},
        description=(
            "Your queue in the study (the queue page): your own assignments, by item, with your "
            "labels, paginated; `progress` counts them. `status` filters: todo, drafts, done, "
            "skipped. Managers see every annotator's under GET /api/assignments/."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=MEMBERS)
    def queue(self, request, slug=None):
        study = self.get_object()
        query = QueueQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        mine = queue_for_annotator(
            study=study,
            user=request.user,
            status_filter=query.validated_data.get("status"),
            held_back=study_round_ids_held_back(study=study),
        )
        # One's own assignments are always visible to one: no permission filter to count.
        page = self.paginate_queryset(mine.values(*ROW_FIELDS).order_by("item_id"))
        response = self.get_paginated_response(rows_with_labels(page))
        response.data["progress"] = _progress(queue_progress(study=study, user=request.user))
        return response

    @extend_schema(
        parameters=[ITEM_ID],
        responses={200: LabelingItemSerializer, 404: ERRORS[404]},
        description=(
            "An item of your queue as the labeling page shows it: your assignment and labels, "
            "the issue with its thread and fixes, the dimensions as the study asks them (only "
            "those an adjudicator's screen-in opened, when you label those). Save "
            "and submit with POST /api/assignments/{id}/draft/ and …/submit/. An item that is "
            "not in your queue is a 404 (labeling is blind)."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"items/(?P<item_id>[^/.]+)/labeling",
        permission_classes=MEMBERS,
    )
    def labeling(self, request, slug=None, item_id=None):
        study = self.get_object()
        assignment = assignment_get_for_annotator(
            study=study, item_id=_item_id(item_id), user=request.user, with_issue=False
        )
        if assignment is None:
            raise NotFound("This item is not in your queue.")
        issue = issue_get_with_thread(issue_id=assignment.item.issue_id)
        # What AssignmentSerializer reads, without reading the assignment again: it is the
        # user's own, of this study's item.
        assignment.item.issue, assignment.annotator = issue, request.user
        assignment_labels_carry(assignment=assignment, version=study.codebook_version)
        item = LabelingItem(
            assignment=assignment,
            issue=issue,
            codebook_version=study.codebook_version_id,
            dimensions=assignment_dimensions(assignment=assignment, study=study),
            locked=assignment.status == Assignment.Status.SUBMITTED
            and assignment.item.status != StudyItem.Status.OPEN,
            upstream_change=item_upstream_change_for_annotator(assignment=assignment),
        )
        return Response(LabelingItemSerializer(item, context={"request": request}).data)
