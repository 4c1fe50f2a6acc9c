"""Assignments over the API: my queue, my next item, an assignment with its labels, and the
verbs save draft, submit and skip. Blind as the pages are: an annotator reads and writes only
their own assignments; a study's managers may read any."""

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.pagination import UncountedPagination
from api.serializers import datetime_shown
from corpus.selectors import issue_text_fields_of
from labeling.access import assignment_list_editable_by, assignment_list_visible_to
from labeling.models import Annotation, Assignment
from labeling.services.annotations import (
    MAX_SECONDS_SPENT,
    DimensionAnswer,
    assignment_save,
    assignment_skip,
)


class AnnotationSerializer(serializers.ModelSerializer):
    dimension = serializers.CharField(source="dimension.key")
    categories = serializers.SlugRelatedField(slug_field="key", many=True, read_only=True)

    class Meta:
        model = Annotation
        fields = ["dimension", "categories", "unsure", "rationale", "evidence", "proposal"]


class AssignmentSerializer(serializers.ModelSerializer):
    study = serializers.CharField(source="item.study.slug")
    issue = serializers.SerializerMethodField()
    annotator = serializers.CharField(source="annotator.username")
    annotations = AnnotationSerializer(many=True, read_only=True)

    class Meta:
        model = Assignment
        fields = [
            "id", "study", "item", "issue", "annotator", "status", "skip_reason",
            "selection_reason", "started_at", "submitted_at", "seconds_spent", "version",
            "annotations",
        ]  # fmt: skip

    def get_issue(self, assignment: Assignment) -> str:
        issue = assignment.item.issue
        return f"{issue.repository.full_name}#{issue.number}"


class AnswerSerializer(serializers.Serializer):
    categories = serializers.ListField(child=serializers.SlugField(), max_length=100, default=list)
    unsure = serializers.BooleanField(default=False)
    # The length limits are the service's (labeling.services.annotations.TEXT_LIMITS), the one
    # rule for the page and the API: a longer text is a 400 naming its dimension.
    rationale = serializers.CharField(
        allow_blank=True, default="", help_text="at most 20,000 characters"
    )
    evidence = serializers.CharField(
        allow_blank=True, default="", help_text="at most 20,000 characters"
    )
    proposal = serializers.CharField(
        allow_blank=True, default="", help_text="at most 200 characters"
    )


class SaveSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=0, required=False)
    seconds_spent = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SECONDS_SPENT,
        required=False,
        help_text="time spent on the item in all, in seconds (at most a day)",
    )
    answers = serializers.DictField(child=AnswerSerializer(), default=dict)


class SkipSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=2000)


SAVE_RESPONSES = {
    200: AssignmentSerializer,
    409: OpenApiResponse(
        ErrorSerializer, description="a stale `version`: the labels changed since; nothing saved"
    ),
}


# An assignment's labels as AssignmentSerializer shows them.
LABELS_PREFETCH = Prefetch(
    "annotations",
    queryset=Annotation.objects.select_related("dimension").prefetch_related("categories"),
)


def with_labels(assignments: QuerySet[Assignment]) -> QuerySet[Assignment]:
    """What AssignmentSerializer shows, in a fixed number of queries (none of the issues'
    texts, which it does not show)."""
    return (
        assignments.select_related("item__study", "item__issue__repository", "annotator")
        .defer(*issue_text_fields_of("item__issue"))
        .prefetch_related(LABELS_PREFETCH)
    )


# What a list row of AssignmentSerializer reads, as plain values (api.assignments.rows_with_labels).
ROW_FIELDS = (
    "id", "item_id", "item__study__slug", "item__issue__repository__owner",
    "item__issue__repository__name", "item__issue__number", "annotator__username", "status",
    "skip_reason", "selection_reason", "started_at", "submitted_at", "seconds_spent", "version",
)  # fmt: skip


def rows_with_labels(rows: list[dict]) -> list[dict]:
    """AssignmentSerializer's output for a page of `ROW_FIELDS` values, built from two more
    queries of plain values: a page of 100 assignments with 9 labels each makes some 1,000
    model instances and nested serializers otherwise (over 100 ms)."""
    labels: dict[int, list[dict]] = {row["id"]: [] for row in rows}
    by_id: dict[int, dict] = {}
    for annotation_id, assignment_id, *values in (
        Annotation.objects.filter(assignment_id__in=labels)
        .order_by("assignment_id", "dimension__position")
        .values_list(
            "id", "assignment_id", "dimension__key", "unsure", "rationale", "evidence", "proposal"
        )
    ):
        dimension, unsure, rationale, evidence, proposal = values
        by_id[annotation_id] = {
            "dimension": dimension, "categories": [], "unsure": unsure,
            "rationale": rationale, "evidence": evidence, "proposal": proposal,
        }  # fmt: skip
        labels[assignment_id].append(by_id[annotation_id])
    for annotation_id, key in (
        Annotation.categories.through.objects.filter(annotation__assignment_id__in=labels)
        .order_by("category__position")
        .values_list("annotation_id", "category__key")
    ):
        by_id[annotation_id]["categories"].append(key)
    return [
        {
            "id": row["id"],
            "study": row["item__study__slug"],
            "item": row["item_id"],
            "issue": f"{row['item__issue__repository__owner']}/"
            f"{row['item__issue__repository__name']}#{row['item__issue__number']}",
            "annotator": row["annotator__username"],
            "status": row["status"],
            "skip_reason": row["skip_reason"],
            "selection_reason": row["selection_reason"],
            "started_at": datetime_shown(row["started_at"]),
            "submitted_at": datetime_shown(row["submitted_at"]),
            "seconds_spent": row["seconds_spent"],
            "version": row["version"],
            "annotations": labels[row["id"]],
        }
        for row in rows
    ]


def assignments_visible_to(user) -> QuerySet[Assignment]:
    """labeling.access.assignment_list_visible_to, ready to serialize."""
    return with_labels(assignment_list_visible_to(user=user))


WRITING_ACTIONS = ("draft", "submit", "skip")


class AssignmentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Your assignments (all of a study's, for its managers), each with its labels. The verbs
    (draft, submit, skip) look the assignment up among your own only, so anyone else's, even one
    you may read, is a 404: blind, and nobody labels in another's name."""

    serializer_class = AssignmentSerializer
    pagination_class = UncountedPagination
    queryset = Assignment.objects.none()  # for the schema; requests use get_queryset
    filterset_fields = ["status", "item__study__slug"]

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Assignment.objects.none()
        if self.action in WRITING_ACTIONS:
            # Read once, with its row lock, its item and the item's study, as the save needs it
            # (`assignment_save`'s `locked`): not read again inside a savepoint of its own.
            return (
                assignment_list_editable_by(user=self.request.user)
                .select_for_update(of=("self",))
                .select_related("item__study__codebook_version")
                .order_by()
            )
        assignments = assignment_list_visible_to(user=self.request.user)
        return with_labels(assignments).order_by("item_id", "annotator_id")

    def _written(self, assignment: Assignment) -> Response:
        """The assignment as it is now, with its labels."""
        own = with_labels(assignment_list_editable_by(user=self.request.user))
        return Response(self.get_serializer(own.get(pk=assignment.pk)).data)

    def list(self, request, *args, **kwargs):
        assignments = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(assignments.values(*ROW_FIELDS))
        return self.get_paginated_response(rows_with_labels(page))

    def _save(self, request, *, submit: bool) -> Response:
        assignment = self.get_object()
        body = SaveSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment_save(
            assignment=assignment,
            user=request.user,
            answers={
                key: DimensionAnswer(
                    category_keys=answer["categories"],
                    unsure=answer["unsure"],
                    rationale=answer["rationale"],
                    evidence=answer["evidence"],
                    proposal=answer["proposal"],
                )
                for key, answer in body.validated_data["answers"].items()
            },
            submit=submit,
            expected_version=body.validated_data.get("version"),
            seconds_spent=body.validated_data.get("seconds_spent"),
            locked=True,
        )
        return self._written(assignment)

    @extend_schema(request=SaveSerializer, responses=SAVE_RESPONSES)
    @action(detail=True, methods=["post"])
    def draft(self, request, pk=None):
        """Save labels as a draft. A stale `version` answers 409 and writes nothing."""
        return self._save(request, submit=False)

    @extend_schema(request=SaveSerializer, responses=SAVE_RESPONSES)
    @action(detail=True, methods=["post"])
    def submit(self, request, pk=None):
        """Save and submit; every required dimension needs its category. When one lacks it, the
        labels are kept as a draft and the 400 names the missing dimensions with the new
        `version` in its details."""
        return self._save(request, submit=True)

    @extend_schema(request=SkipSerializer, responses=AssignmentSerializer)
    @action(detail=True, methods=["post"])
    def skip(self, request, pk=None):
        assignment = self.get_object()
        body = SkipSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment_skip(
            assignment=assignment,
            user=request.user,
            reason=body.validated_data["reason"],
            locked=True,
        )
        return self._written(assignment)
