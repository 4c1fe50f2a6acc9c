"""Resolution over the API: the disagreement queue, an item side by side, decisions, the
discussion and tie-breakers. Thin: the rules are in labeling.resolution_rules and the services
of labeling.services.resolutions, the reads in labeling.disagreements, who may see what in
labeling.access.

The actions hang on StudyViewSet (`StudyResolutionActions`), so that the study is looked up and
its roles checked exactly as for every other route of a study: a study the user may not see is a
404, a role that does not allow the action a 403. Items are then looked up within that study
only, so an item id of another study is a 404 whatever the role.
"""

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.permissions import IsStudyAdjudicator, IsStudyManager, IsStudyMember
from api.upstream_changes import (
    UpstreamChangeRecordSerializer,
    UpstreamChangeSerializer,
    UpstreamReviewSerializer,
)
from common.exceptions import ApplicationError
from labeling.access import (
    assignment_get_for_annotator,
    item_can_discuss,
    item_can_resolve,
    item_get_for_resolution,
    study_roles,
)
from labeling.agreement_report import LabelTableFilter, agreement_query_check
from labeling.disagreements import (
    AnnotatorColumn,
    DimensionRow,
    Disagreement,
    DisagreementFilter,
    ItemResolutionView,
    disagreement_queue,
    discussion_of,
    item_gold_list,
    item_resolution_view,
)
from labeling.models import Assignment, DiscussionComment, ResolutionRevision, Study, StudyItem
from labeling.resolution_rules import DimensionState
from labeling.services.resolutions import (
    DECISION_METHODS,
    MAX_COMMENT,
    MAX_NOTE,
    discussion_comment_add,
    item_tiebreaker_request,
    resolution_data,
    resolution_decide,
)
from labeling.services.upstream_changes import item_upstream_review
from labeling.upstream_changes import (
    item_upstream_change,
    item_upstream_history,
    item_upstream_waiting_for,
)
from taxonomy.models import Category

OVERSEERS = [IsAuthenticated, IsStudyMember & (IsStudyManager | IsStudyAdjudicator)]
ITEM_ID = OpenApiParameter("item_id", OpenApiTypes.INT, OpenApiParameter.PATH)


# Shapes


class ResolutionSerializer(serializers.Serializer):
    """A gold label: the shape of `labeling.services.resolutions.resolution_data`."""

    dimension = serializers.CharField()
    categories = serializers.ListField(child=serializers.CharField())
    method = serializers.CharField(help_text="consensus, majority, adjudicated or discussion")
    note = serializers.CharField()
    decided_by = serializers.CharField(
        allow_null=True, help_text="null: recorded automatically (consensus, majority)"
    )
    version = serializers.IntegerField()
    updated_at = serializers.DateTimeField()


class DiscussionCommentSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True, allow_null=True)

    class Meta:
        model = DiscussionComment
        fields = ["id", "author", "body", "created_at"]
        read_only_fields = fields


class StudyItemSerializer(serializers.ModelSerializer):
    """An item of a study with its issue."""

    issue = serializers.CharField(read_only=True, help_text="owner/name#number")
    title = serializers.CharField(source="issue.title", read_only=True)
    url = serializers.CharField(source="issue.html_url", read_only=True)
    round = serializers.CharField(source="round.name", read_only=True)
    repository = serializers.CharField(source="issue.repository.full_name", read_only=True)
    upstream_change = serializers.SerializerMethodField(
        help_text="what changed on GitHub since the item was labeled; null: nothing to review"
    )

    class Meta:
        model = StudyItem
        fields = [
            "id", "issue", "title", "url", "round", "repository", "status", "changed_upstream_at",
            "upstream_change",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(UpstreamChangeSerializer(allow_null=True))
    def get_upstream_change(self, item: StudyItem) -> dict | None:
        diff = item_upstream_change(item=item)
        return UpstreamChangeSerializer(diff).data if diff else None


# The disagreement queue


class DisagreementQuerySerializer(serializers.Serializer):
    dimension = serializers.SlugField(required=False, max_length=100)
    conflict = serializers.CharField(required=False, max_length=2000, help_text='e.g. "a vs b"')
    round = serializers.CharField(required=False, max_length=100)
    repository = serializers.CharField(required=False, max_length=300, help_text="owner/name")
    page = serializers.IntegerField(required=False, min_value=1)


class DisagreementSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="item.id")
    issue = serializers.CharField(source="item.issue", help_text="owner/name#number")
    title = serializers.CharField(source="item.issue.title")
    url = serializers.CharField(source="item.issue.html_url")
    round = serializers.CharField(source="round_name")
    repository = serializers.CharField()
    dimension = serializers.CharField(source="dimension.key")
    conflict = serializers.CharField(help_text='the categories in conflict, e.g. "a vs b"')
    answers = serializers.SerializerMethodField(
        help_text="annotator -> category keys; null: the dimension did not apply to their answers"
    )

    @extend_schema_field(
        serializers.DictField(
            child=serializers.ListField(child=serializers.CharField(), allow_null=True)
        )
    )
    def get_answers(self, row: Disagreement) -> dict[str, list[str] | None]:
        return {
            annotator: None if keys is None else sorted(keys)
            for annotator, keys in row.answers.items()
        }


class DisagreementCountsSerializer(serializers.Serializer):
    """Per filter, how many disagreements each of its values leaves, the other filters applied."""

    dimension = serializers.DictField(child=serializers.IntegerField())
    conflict = serializers.DictField(child=serializers.IntegerField())
    round = serializers.DictField(child=serializers.IntegerField())
    repository = serializers.DictField(child=serializers.IntegerField())


class DisagreementPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    counts = DisagreementCountsSerializer()
    results = DisagreementSerializer(many=True)


# One item, side by side


class AnnotatorAnswerSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    applies = serializers.BooleanField(help_text="false: their own screening ruled it out")
    categories = serializers.SerializerMethodField(help_text="category keys, codebook order")
    unsure = serializers.BooleanField()
    rationale = serializers.CharField()
    evidence = serializers.CharField()
    proposal = serializers.CharField()
    seconds_spent = serializers.IntegerField(help_text="on the whole item")
    is_tiebreaker = serializers.BooleanField()

    def get_categories(self, column: AnnotatorColumn) -> list[str]:
        return [category.key for category in column.categories]


class InvolvedCategorySerializer(serializers.ModelSerializer):
    class Meta:
        model = Category
        fields = ["key", "name", "definition", "include", "exclude"]
        read_only_fields = fields


class ResolutionRevisionSerializer(serializers.ModelSerializer):
    changed_by = serializers.CharField(
        source="changed_by.username", allow_null=True, read_only=True, help_text="null: automatic"
    )
    previous_categories = serializers.ListField(
        source="previous_category_keys",
        child=serializers.CharField(),
        allow_null=True,
        read_only=True,
        help_text="null: the first decision",
    )
    categories = serializers.ListField(
        source="category_keys", child=serializers.CharField(), read_only=True
    )

    class Meta:
        model = ResolutionRevision
        fields = [
            "changed_by", "changed_at", "previous_categories", "previous_method",
            "categories", "method", "note",
        ]  # fmt: skip
        read_only_fields = fields


class DimensionRowSerializer(serializers.Serializer):
    dimension = serializers.CharField(source="dimension.key")
    name = serializers.CharField(source="dimension.name")
    multi_label = serializers.BooleanField(source="dimension.multi_label")
    required = serializers.BooleanField(source="dimension.required")
    state = serializers.ChoiceField(
        choices=[state.value for state in DimensionState],
        help_text="open: a disagreement; waiting: its condition is not settled yet",
    )
    answers = AnnotatorAnswerSerializer(source="columns", many=True)
    involved = InvolvedCategorySerializer(many=True, help_text="the categories anyone chose")
    resolution = serializers.SerializerMethodField()
    revisions = ResolutionRevisionSerializer(many=True)

    @extend_schema_field(ResolutionSerializer(allow_null=True))
    def get_resolution(self, row: DimensionRow) -> dict | None:
        if row.resolution is None:
            return None
        # The row holds the dimension already; this spares resolution_data a query per row.
        row.resolution.dimension = row.dimension
        return resolution_data(row.resolution)


class ItemResolutionSerializer(serializers.Serializer):
    """What an adjudicator or a manager sees of an item: everyone's labels side by side."""

    item = StudyItemSerializer()
    dimensions = DimensionRowSerializer(source="rows", many=True)
    discussion = DiscussionCommentSerializer(many=True)
    tiebreaker_candidates = serializers.SerializerMethodField(
        help_text="annotators of the study who have not seen the item"
    )
    waiting_for = serializers.SerializerMethodField(
        help_text="annotators whose labels are not submitted yet (a tie-breaker at work)"
    )
    upstream_changes = serializers.SerializerMethodField(
        help_text="changes of the issue on GitHub since it was labeled, newest first, with who "
        "looked again: the open one (if any) and the cleared ones"
    )
    upstream_waiting_for = serializers.SerializerMethodField(
        help_text="annotators who labeled the item before its open change and have not "
        "submitted again since"
    )

    def get_tiebreaker_candidates(self, view: ItemResolutionView) -> list[str]:
        return [user.get_username() for user in view.candidates]

    def get_waiting_for(self, view: ItemResolutionView) -> list[str]:
        return [assignment.annotator.get_username() for assignment in view.unfinished]

    @extend_schema_field(UpstreamChangeRecordSerializer(many=True))
    def get_upstream_changes(self, view: ItemResolutionView) -> list[dict]:
        history = item_upstream_history(item=view.item)
        return UpstreamChangeRecordSerializer(history, many=True).data

    def get_upstream_waiting_for(self, view: ItemResolutionView) -> list[str]:
        return item_upstream_waiting_for(item=view.item)


@dataclass(frozen=True)
class ItemOutcome:
    item: StudyItem
    gold: list[dict]  # resolution_data of each gold label
    discussion: list[DiscussionComment]


class ItemOutcomeSerializer(serializers.Serializer):
    """What an annotator of the item sees once they submitted: the gold labels so far and the
    discussion, never the other annotators' labels."""

    item = StudyItemSerializer()
    gold = ResolutionSerializer(many=True)
    discussion = DiscussionCommentSerializer(many=True)


ITEM_VIEWS = PolymorphicProxySerializer(
    component_name="ItemResolutionOrOutcome",
    serializers=[ItemResolutionSerializer, ItemOutcomeSerializer],
    resource_type_field_name=None,
)


# Requests


class DecisionSerializer(serializers.Serializer):
    dimension = serializers.SlugField(max_length=100)
    categories = serializers.ListField(
        child=serializers.SlugField(max_length=100), max_length=100, default=list
    )
    method = serializers.ChoiceField(
        choices=[str(method) for method in DECISION_METHODS], default="adjudicated"
    )
    note = serializers.CharField(allow_blank=True, default="", max_length=MAX_NOTE)
    version = serializers.IntegerField(
        min_value=0,
        default=0,
        help_text="the version of the resolution you saw (0: none yet); a stale one is a 409",
    )


class CommentSerializer(serializers.Serializer):
    body = serializers.CharField(max_length=MAX_COMMENT)


class TiebreakerRequestSerializer(serializers.Serializer):
    annotator = serializers.CharField(
        required=False,
        max_length=150,
        help_text="a username; by default the candidate with the fewest unfinished assignments",
    )


class TiebreakerSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="annotator.username", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "item", "annotator", "is_tiebreaker", "selection_reason"]
        read_only_fields = fields


# Views


def _item_id(value: str) -> int:
    """The item id of a URL; NotFound for anything that is no id a database could hold (a
    number over 2^63 would overflow SQLite's integer)."""
    try:
        item_id = int(value)
    except (TypeError, ValueError):
        raise NotFound("No such item.") from None
    if not 0 < item_id < 2**63:
        raise NotFound("No such item.")
    return item_id


def _item_for_resolution(study: Study, user, item_id: str) -> StudyItem:
    item = item_get_for_resolution(
        study=study, roles=study_roles(study=study, user=user), item_id=_item_id(item_id)
    )
    if item is None:
        raise NotFound("No such item.")
    return item


def _item_for_discussion(study: Study, user, item_id: str) -> StudyItem:
    """The item of this study whose gold labels and discussion the user may read: one they may
    resolve, or their own once they submitted it (found as the pages find it)."""
    item_id = _item_id(item_id)
    item = item_get_for_resolution(
        study=study, roles=study_roles(study=study, user=user), item_id=item_id
    )
    if item is not None:
        return item
    assignment = assignment_get_for_annotator(study=study, item_id=item_id, user=user)
    if assignment is None or not item_can_discuss(
        item=assignment.item, user=user, assignment=assignment
    ):
        raise NotFound("No such item.")
    return assignment.item


ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="not valid"),
    403: OpenApiResponse(ErrorSerializer, description="your role does not allow it"),
    404: OpenApiResponse(ErrorSerializer, description="no such study or item for you"),
}


class StudyResolutionActions:
    """Resolution routes of a study, mixed into StudyViewSet (whose get_object finds the study
    among the user's and checks the action's permission classes)."""

    @extend_schema(
        parameters=[DisagreementQuerySerializer],
        responses={200: DisagreementPageSerializer, **ERRORS},
        description=(
            "The open disagreements of the study (a dimension of an item in resolution without "
            "its gold label), oldest item first, paginated; `counts` gives how many each filter "
            "value leaves. A dimension, round or repository the study does not have is a 400. "
            "Managers and adjudicators of the study."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=OVERSEERS)
    def disagreements(self, request, slug=None):
        study = self.get_object()
        query = DisagreementQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        # A dimension, round or repository the study does not have is a 400 naming it, as for
        # the agreement report, not an empty queue passed off as "no disagreements".
        agreement_query_check(
            study=study,
            dimension_keys=[params["dimension"]] if params.get("dimension") else None,
            filters=LabelTableFilter(
                round_name=params.get("round"), repository=params.get("repository")
            ),
        )
        filters = DisagreementFilter(
            dimension=params.get("dimension"),
            conflict=params.get("conflict"),
            round_name=params.get("round"),
            repository=params.get("repository"),
        )
        rows, counts = disagreement_queue(study=study, filters=filters)
        page = self.paginate_queryset(rows)
        response = self.get_paginated_response(DisagreementSerializer(page, many=True).data)
        response.data["counts"] = counts
        return response

    @extend_schema(
        parameters=[ITEM_ID],
        responses={200: ITEM_VIEWS, 404: ERRORS[404]},
        description=(
            "An item side by side for its study's managers and adjudicators (every annotator's "
            "labels per dimension, the categories involved, the gold labels with their history, "
            "the discussion, tie-breaker candidates). An annotator of the item who submitted "
            "sees its status, gold labels and discussion only. Anyone else: 404."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"items/(?P<item_id>[^/.]+)/resolution",
        permission_classes=[IsAuthenticated, IsStudyMember],
    )
    def resolution(self, request, slug=None, item_id=None):
        study = self.get_object()
        if item_can_resolve(roles=study_roles(study=study, user=request.user)):
            item = _item_for_resolution(study, request.user, item_id)
            return Response(ItemResolutionSerializer(item_resolution_view(item=item)).data)
        item = _item_for_discussion(study, request.user, item_id)
        outcome = ItemOutcome(
            item=item,
            gold=[
                resolution_data(resolution)
                for resolution in item_gold_list(item=item, version=study.codebook_version)
            ],
            discussion=discussion_of(item=item),
        )
        return Response(ItemOutcomeSerializer(outcome).data)

    @extend_schema(
        parameters=[ITEM_ID],
        request=DecisionSerializer,
        responses={
            200: ResolutionSerializer,
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer,
                description=(
                    "someone decided meanwhile: `details.resolution` is their decision; "
                    "nothing changed"
                ),
            ),
        },
        description=(
            "Record the gold label of a dimension of the item (managers and adjudicators). Any "
            "category of the dimension may be chosen; deciding again keeps a revision."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"items/(?P<item_id>[^/.]+)/resolutions",
        permission_classes=OVERSEERS,
    )
    def resolutions(self, request, slug=None, item_id=None):
        study = self.get_object()
        item = _item_for_resolution(study, request.user, item_id)
        body = DecisionSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = body.validated_data
        resolution = resolution_decide(
            item=item,
            dimension_key=decision["dimension"],
            user=request.user,
            category_keys=decision["categories"],
            method=decision["method"],
            note=decision["note"],
            expected_version=decision["version"],
        )
        return Response(resolution_data(resolution))

    @extend_schema(
        methods=["GET"],
        parameters=[ITEM_ID],
        responses={200: DiscussionCommentSerializer(many=True), 404: ERRORS[404]},
        description="The item's discussion, oldest first, paginated.",
    )
    @extend_schema(
        methods=["POST"],
        parameters=[ITEM_ID],
        request=CommentSerializer,
        responses={201: DiscussionCommentSerializer, 400: ERRORS[400], 404: ERRORS[404]},
        description="Add to the item's discussion.",
    )
    @action(
        detail=True,
        methods=["get", "post"],
        url_path=r"items/(?P<item_id>[^/.]+)/discussion",
        permission_classes=[IsAuthenticated, IsStudyMember],
    )
    def discussion(self, request, slug=None, item_id=None):
        """The study's managers and adjudicators, and the annotators of the item once they
        submitted, read and write its discussion; for anyone else the item is a 404."""
        study = self.get_object()
        item = _item_for_discussion(study, request.user, item_id)
        if request.method == "GET":
            page = self.paginate_queryset(discussion_of(item=item))
            return self.get_paginated_response(DiscussionCommentSerializer(page, many=True).data)
        body = CommentSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        comment = discussion_comment_add(
            item=item, user=request.user, body=body.validated_data["body"]
        )
        return Response(DiscussionCommentSerializer(comment).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[ITEM_ID],
        request=TiebreakerRequestSerializer,
        responses={201: TiebreakerSerializer, **ERRORS},
        description=(
            "Give the item in resolution to one more annotator of the study who has not seen "
            "it (the named one, else the least busy); with their labels a strict majority "
            "decides. Managers and adjudicators."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"items/(?P<item_id>[^/.]+)/tiebreaker",
        permission_classes=OVERSEERS,
    )
    def tiebreaker(self, request, slug=None, item_id=None):
        study = self.get_object()
        item = _item_for_resolution(study, request.user, item_id)
        body = TiebreakerRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        annotator = None
        if "annotator" in body.validated_data:
            name = body.validated_data["annotator"]
            users = get_user_model()
            annotator = users.objects.filter(**{users.USERNAME_FIELD: name}).first()
            if annotator is None:
                raise ApplicationError(
                    f"{name} cannot break this tie: there is no such annotator.",
                    extra={"annotator": name},
                )
        assignment = item_tiebreaker_request(item=item, user=request.user, annotator=annotator)
        return Response(TiebreakerSerializer(assignment).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[ITEM_ID],
        request=UpstreamReviewSerializer,
        responses={200: UpstreamChangeRecordSerializer, **ERRORS},
        description=(
            "The item's labels still hold after its issue changed on GitHub: the open change is "
            "cleared (and the item's `changed_upstream_at` with it), the review kept with its "
            "note in the change's checks. An item with no open change is a 400. Managers of the "
            "study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"items/(?P<item_id>[^/.]+)/upstream-review",
        permission_classes=[IsAuthenticated, IsStudyMember & IsStudyManager],
    )
    def upstream_review(self, request, slug=None, item_id=None):
        study = self.get_object()
        item = _item_for_resolution(study, request.user, item_id)
        body = UpstreamReviewSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        note = body.validated_data["note"]
        change = item_upstream_review(item=item, user=request.user, note=note)
        record = next(found for found in item_upstream_history(item=item) if found.pk == change.pk)
        return Response(UpstreamChangeRecordSerializer(record).data)
