"""Setting a study up over the API: creating one from a selection of the corpus and a seeded
sampling rule, the live count of a rule, the study's dashboard, and its members. Thin: the rules
are in labeling.services.setup and labeling.services.studies, the reads in labeling.dashboard,
who may do what in labeling.access.

The actions hang on StudyViewSet (`StudySetupActions`), so that a study is looked up and its
roles checked as for every other route of a study: a study the user may not see is a 404, a
role that does not allow the action a 403.
"""

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.permissions import IsStudyAdjudicator, IsStudyManager, IsStudyMember
from api.resolutions import ERRORS
from api.serializers import StudyDetailSerializer
from common.names import NAME_MAX_LENGTH, NameKind, NameValidator
from corpus.selectors import IssueSelection, repository_names
from labeling.access import codebook_version_get_visible_to, user_can_create_study
from labeling.dashboard import (
    study_annotator_progress,
    study_changed_upstream,
    study_funnel,
    study_round_progress,
)
from labeling.models import Membership, Round, Study
from labeling.sampling import METHODS
from labeling.services.setup import (
    MAX_SEED,
    RoundPlan,
    SamplingRule,
    annotator_open_items_reassign,
    study_member_join,
    study_member_leave,
    study_sample_preview,
    study_setup,
)

PREVIEW_REFERENCES = 1000  # the drawn issues a preview lists; the totals count them all
ROLES = "|".join(Membership.Role.values)
USERNAME = OpenApiParameter("username", OpenApiTypes.STR, OpenApiParameter.PATH)
ROLE = OpenApiParameter(
    "role", OpenApiTypes.STR, OpenApiParameter.PATH, enum=Membership.Role.values
)
MANAGERS = [IsAuthenticated, IsStudyMember & IsStudyManager]
OVERSEERS = [IsAuthenticated, IsStudyMember & (IsStudyManager | IsStudyAdjudicator)]


class CanCreateStudy(BasePermission):
    """Superusers and users given the "add study" permission (labeling.access)."""

    message = "Creating studies is for superusers and users given the add-study permission."

    def has_permission(self, request, view) -> bool:
        return user_can_create_study(user=request.user)


def users_named(names: list[str]) -> list:
    """The users of these usernames, in order and once each; a 400 naming the unknown ones."""
    names = list(dict.fromkeys(name.strip() for name in names))
    found = get_user_model().objects.filter(username__in=names).in_bulk(field_name="username")
    unknown = [name for name in names if name not in found]
    if unknown:
        raise serializers.ValidationError(f"No such user: {', '.join(unknown)}.")
    return [found[name] for name in names]


# Request shapes


class SelectionSerializer(serializers.Serializer):
    """Which issues of the corpus the study draws from (pull requests never count)."""

    repositories = serializers.ListField(
        child=serializers.RegexField(r"^[\w.\-]+/[\w.\-]+$", max_length=300),
        default=list,
        max_length=1000,
        help_text='"owner/name" of repositories of the corpus; empty: every repository',
    )
    state = serializers.ChoiceField(choices=["any", "open", "closed"], default="any")
    labels = serializers.ListField(
        child=serializers.CharField(max_length=200), default=list, max_length=100
    )
    labels_match = serializers.ChoiceField(
        choices=["any", "all"], default="any", help_text="an issue carries any or all the labels"
    )
    created_after = serializers.DateTimeField(default=None, allow_null=True)
    created_before = serializers.DateTimeField(default=None, allow_null=True, help_text="exclusive")
    has_fix = serializers.BooleanField(
        default=None, allow_null=True, help_text="a fix is linked; null: either"
    )
    query = serializers.CharField(
        default="", allow_blank=True, max_length=500, help_text="words of the title or body"
    )

    def validate_repositories(self, value: list[str]) -> list[str]:
        value = list(dict.fromkeys(value))
        unknown = sorted(set(value) - set(repository_names()))
        if unknown:
            raise serializers.ValidationError(
                f"Not a repository of the corpus: {', '.join(unknown)}."
            )
        return value

    def validate(self, data: dict) -> dict:
        after, before = data.get("created_after"), data.get("created_before")
        if after and before and after >= before:
            raise serializers.ValidationError(
                {"created_before": "The date range ends before it starts."}
            )
        return data


class SamplingSerializer(serializers.Serializer):
    """How the selected issues are drawn: seeded SHA-256 ranks (labeling.sampling)."""

    method = serializers.ChoiceField(
        choices=list(METHODS),
        default="all",
        help_text="all; random (size); stratified per repository (per_repository, or size "
        "split in proportion)",
    )
    size = serializers.IntegerField(min_value=1, default=None, allow_null=True)
    per_repository = serializers.IntegerField(min_value=1, default=None, allow_null=True)
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)

    def validate(self, data: dict) -> dict:
        if data["method"] == "random" and data["size"] is None:
            raise serializers.ValidationError({"size": "Random sampling needs a size."})
        if (
            data["method"] == "stratified"
            and data["size"] is None
            and data["per_repository"] is None
        ):
            raise serializers.ValidationError(
                {"per_repository": "Stratified sampling needs a number per repository or a size."}
            )
        return data


class RoundPlanSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=Round.Kind.values, default=Round.Kind.MAIN)
    size = serializers.IntegerField(
        min_value=1,
        default=None,
        allow_null=True,
        help_text="how many of the sample, in rank order; null: the rest (the last round only)",
    )


class SampleRuleSerializer(serializers.Serializer):
    selection = SelectionSerializer()
    sampling = SamplingSerializer(required=False)

    def rule(self) -> SamplingRule:
        data = self.validated_data
        selection = data["selection"]
        sampling = data.get("sampling") or SamplingSerializer().run_validation({})
        return SamplingRule(
            selection=IssueSelection(
                repositories=tuple(selection["repositories"]),
                state=selection["state"],
                labels=tuple(selection["labels"]),
                labels_match=selection["labels_match"],
                created_after=selection["created_after"],
                created_before=selection["created_before"],
                has_fix=selection["has_fix"],
                query=selection["query"],
            ),
            method=sampling["method"],
            size=sampling["size"],
            per_repository=sampling["per_repository"],
            seed=sampling["seed"],
        )


def _usernames(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(max_length=150), default=list, max_length=500,
        help_text=help_text,
    )  # fmt: skip


class StudyCreateSerializer(SampleRuleSerializer):
    slug = serializers.SlugField(max_length=100)
    name = serializers.CharField(
        max_length=NAME_MAX_LENGTH[NameKind.STUDY_NAME],
        validators=[NameValidator(NameKind.STUDY_NAME)],
        help_text="no control or invisible formatting characters (common.names)",
    )
    description = serializers.CharField(default="", allow_blank=True, max_length=20_000)
    codebook_version = serializers.IntegerField(help_text="a codebook version id")
    k = serializers.IntegerField(
        min_value=1, max_value=50, default=2, help_text="annotators per item"
    )
    overlap = serializers.FloatField(
        min_value=0.0, max_value=1.0, default=1.0, help_text="the share of items coded by k"
    )
    blind = serializers.BooleanField(default=True)
    resolution_rule = serializers.ChoiceField(
        choices=Study.ResolutionRule.values, default=Study.ResolutionRule.ADJUDICATION
    )
    screen_in_override = serializers.ChoiceField(
        choices=Study.ScreenInOverride.values,
        default=Study.ScreenInOverride.RELABEL,
        help_text=(
            "when an adjudicator screens in an item its annotators screened out, who labels the "
            "dimensions that now apply: annotators who have not seen the item, or the adjudicator"
        ),
    )
    show_similar_gold = serializers.BooleanField(
        default=False,
        help_text="the labeling page's similar issues show their gold labels (never people's)",
    )
    required_dimensions = serializers.ListField(
        child=serializers.SlugField(max_length=100),
        default=None,
        allow_null=True,
        help_text="dimension keys that must be answered to submit; null: as the codebook says",
    )
    rounds = RoundPlanSerializer(many=True, required=False, max_length=50)
    annotators = _usernames("usernames")
    managers = _usernames("usernames; the creator is a manager in any case")
    adjudicators = _usernames("usernames")

    def validate_codebook_version(self, value: int):
        version = codebook_version_get_visible_to(
            version_id=value, user=self.context["request"].user
        )
        if version is None:
            raise serializers.ValidationError(f"No such codebook version: {value}.")
        return version

    def validate_rounds(self, value: list[dict]) -> list[dict]:
        if not value:
            raise serializers.ValidationError("A study has at least one round.")
        return value

    def validate_annotators(self, value: list[str]) -> list:
        return users_named(value)

    def validate_managers(self, value: list[str]) -> list:
        return users_named(value)

    def validate_adjudicators(self, value: list[str]) -> list:
        return users_named(value)


class MemberAddSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.values)

    def validate_username(self, value: str):
        return users_named([value])[0]


class ReassignSerializer(serializers.Serializer):
    to = serializers.CharField(
        max_length=150,
        default=None,
        allow_null=True,
        help_text="another annotator of the study; null: the least loaded annotators",
    )

    def validate_to(self, value: str | None):
        return None if value is None else users_named([value])[0]


# Response shapes


class SamplePreviewSerializer(serializers.Serializer):
    candidates = serializers.DictField(
        child=serializers.IntegerField(), help_text="repository -> matching issues"
    )
    sampled = serializers.DictField(
        child=serializers.IntegerField(), help_text="repository -> issues the rule draws"
    )
    total_candidates = serializers.IntegerField()
    total_sampled = serializers.IntegerField()
    references = serializers.SerializerMethodField(
        help_text=f'the drawn issues in rank order, "owner/name#number" (the first '
        f"{PREVIEW_REFERENCES})"
    )

    def get_references(self, preview) -> list[str]:
        return preview.references[:PREVIEW_REFERENCES]


class FunnelRowSerializer(serializers.Serializer):
    system = serializers.CharField(help_text='a repository, "owner/name"; "all" for the total')
    candidates = serializers.IntegerField(
        source="counts.candidates",
        allow_null=True,
        help_text="what the selection matched at setup; null for a study made from a list",
    )
    sampled = serializers.IntegerField(source="counts.sampled")
    screened_in = serializers.IntegerField(
        source="counts.screened_in",
        allow_null=True,
        help_text="null when the codebook has no screening dimension",
    )
    labeled = serializers.IntegerField(source="counts.labeled")
    resolved = serializers.IntegerField(source="counts.resolved")


class AnnotatorProgressSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    assigned = serializers.IntegerField()
    todo = serializers.IntegerField()
    drafts = serializers.IntegerField()
    submitted = serializers.IntegerField()
    skipped = serializers.IntegerField()
    seconds_spent = serializers.IntegerField()
    median_seconds = serializers.FloatField(allow_null=True)
    percent = serializers.IntegerField(help_text="submitted of the items not skipped")


class RoundProgressSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.CharField()
    n_items = serializers.IntegerField()
    labeled = serializers.IntegerField()
    resolved = serializers.IntegerField()


class ChangedUpstreamSerializer(serializers.Serializer):
    item = serializers.IntegerField(source="id")
    issue = serializers.CharField(help_text="owner/name#number")
    title = serializers.CharField(source="issue.title")
    changed_upstream_at = serializers.DateTimeField()


class DashboardSerializer(serializers.Serializer):
    funnel = FunnelRowSerializer(many=True)
    annotators = AnnotatorProgressSerializer(many=True)
    rounds = RoundProgressSerializer(many=True)
    changed_upstream = ChangedUpstreamSerializer(many=True)


class MemberSerializer(serializers.Serializer):
    username = serializers.CharField()
    role = serializers.CharField()


class MemberAddedSerializer(MemberSerializer):
    assigned = serializers.IntegerField(
        allow_null=True, help_text="assignments an annotator got on joining; null for other roles"
    )


class MovedSerializer(serializers.Serializer):
    moved = serializers.IntegerField(help_text="unfinished items handed on to other annotators")


# The routes


class StudySetupActions:
    """Setup routes, mixed into StudyViewSet (whose get_object finds the study among the
    user's and checks the action's permission classes)."""

    def get_permissions(self):
        if self.action == "create":
            return [IsAuthenticated(), CanCreateStudy()]
        return super().get_permissions()

    @extend_schema(
        request=StudyCreateSerializer,
        responses={
            201: StudyDetailSerializer,
            400: ERRORS[400],
            403: OpenApiResponse(ErrorSerializer, description="you may not create studies"),
        },
        description=(
            "Create a study from a selection of the corpus and a seeded sampling rule, cut "
            "into rounds in rank order (a pilot gets the first issues of the sample), its items "
            "assigned. The rule, the seed and the counts are stored in `sampling`. For "
            "superusers and users with the add-study permission; the creator becomes a manager."
        ),
    )
    def create(self, request):
        body = StudyCreateSerializer(data=request.data, context={"request": request})
        body.is_valid(raise_exception=True)
        data = body.validated_data
        rounds = data.get("rounds") or [{"name": "Main", "kind": Round.Kind.MAIN, "size": None}]
        study = study_setup(
            slug=data["slug"],
            name=data["name"],
            description=data["description"],
            codebook_version=data["codebook_version"],
            rule=body.rule(),
            rounds=[RoundPlan(r["name"], r["kind"], r["size"]) for r in rounds],
            k=data["k"],
            overlap=data["overlap"],
            blind=data["blind"],
            resolution_rule=data["resolution_rule"],
            screen_in_override=data["screen_in_override"],
            show_similar_gold=data["show_similar_gold"],
            required_dimensions=data["required_dimensions"],
            annotators=data["annotators"],
            managers=[request.user, *(u for u in data["managers"] if u.pk != request.user.pk)],
            adjudicators=data["adjudicators"],
        )
        study = self.get_queryset().get(pk=study.pk)
        return Response(StudyDetailSerializer(study).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=SampleRuleSerializer,
        responses={
            200: SamplePreviewSerializer,
            400: ERRORS[400],
            403: OpenApiResponse(ErrorSerializer, description="you may not create studies"),
        },
        description=(
            "What a selection and a sampling rule match and draw from the corpus now, per "
            "repository: the live count of a study being set up (the same draw as creating it)."
        ),
    )
    @action(
        detail=False,
        methods=["post"],
        permission_classes=[IsAuthenticated, CanCreateStudy],
    )
    def preview(self, request):
        body = SampleRuleSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        preview = study_sample_preview(rule=body.rule())
        return Response(SamplePreviewSerializer(preview).data)

    @extend_schema(
        responses={200: DashboardSerializer, 403: ERRORS[403], 404: ERRORS[404]},
        description=(
            "The study's progress: the screening funnel per repository (candidates, sampled, "
            "screened in, labeled, resolved), progress per annotator and per round, and items "
            "whose issue changed on GitHub after they were labeled. Managers and adjudicators."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=OVERSEERS)
    def dashboard(self, request, slug=None):
        study = self.get_object()
        dashboard = {
            "funnel": study_funnel(study=study),
            "annotators": study_annotator_progress(study=study),
            "rounds": study_round_progress(study=study),
            "changed_upstream": study_changed_upstream(study=study),
        }
        return Response(DashboardSerializer(dashboard).data)

    @extend_schema(
        methods=["get"],
        responses={200: MemberSerializer(many=True), 403: ERRORS[403], 404: ERRORS[404]},
        description="The study's members, one row per role, paginated. Managers of the study.",
    )
    @extend_schema(
        methods=["post"],
        request=MemberAddSerializer,
        responses={201: MemberAddedSerializer, **ERRORS},
        description=(
            "Give a user a role in the study. A new annotator of a study that assigns up front "
            "gets their share of the work (`assigned`). Managers of the study."
        ),
    )
    @action(detail=True, methods=["get", "post"], permission_classes=MANAGERS)
    def members(self, request, slug=None):
        study = self.get_object()
        if request.method == "GET":
            members = Membership.objects.filter(study=study).order_by("role", "user__username")
            rows = [
                {"username": username, "role": role}
                for username, role in members.values_list("user__username", "role")
            ]
            page = self.paginate_queryset(rows)
            return self.get_paginated_response(MemberSerializer(page, many=True).data)
        body = MemberAddSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        user, role = body.validated_data["username"], body.validated_data["role"]
        assigned = study_member_join(study=study, user=user, role=role)
        added = {"username": user.get_username(), "role": role, "assigned": assigned}
        return Response(MemberAddedSerializer(added).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[USERNAME, ROLE],
        request=None,
        responses={200: MovedSerializer, **ERRORS},
        description=(
            "Take a role away. An annotator's unfinished items go to the others and their "
            "submitted labels stay; the last manager stays (400). Managers of the study."
        ),
    )
    @action(
        detail=True,
        methods=["delete"],
        url_path=rf"members/(?P<username>[^/]+)/(?P<role>{ROLES})",
        url_name="member",
        permission_classes=MANAGERS,
    )
    def member(self, request, slug=None, username=None, role=None):
        study = self.get_object()
        user = _member(study, username, role)
        moved = study_member_leave(study=study, user=user, role=role, by=request.user)
        return Response(MovedSerializer({"moved": moved}).data)

    @extend_schema(
        parameters=[USERNAME],
        request=ReassignSerializer,
        responses={200: MovedSerializer, **ERRORS},
        description=(
            "Hand an annotator's unfinished items (to do and drafts) to `to` or to the least "
            "loaded other annotators; submitted work stays. Managers of the study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"members/(?P<username>[^/]+)/reassign",
        url_name="member-reassign",
        permission_classes=MANAGERS,
    )
    def reassign(self, request, slug=None, username=None):
        study = self.get_object()
        annotator = _member(study, username, Membership.Role.ANNOTATOR)
        body = ReassignSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        moved = annotator_open_items_reassign(
            study=study, annotator=annotator, to=body.validated_data["to"], by=request.user
        )
        return Response(MovedSerializer({"moved": moved}).data)


def _member(study: Study, username: str, role: str):
    """The user holding this role in the study; a 404 otherwise."""
    membership = (
        Membership.objects.filter(study=study, role=role, user__username=username)
        .select_related("user")
        .first()
    )
    if membership is None:
        raise NotFound(f"{username} is not a {role} of this study.")
    return membership.user
