"""Thin DRF views over the selectors; what a user may see is decided there, not here."""

from django.db.models import Exists, OuterRef, Prefetch
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from api.assignments import AssignmentSerializer, assignments_visible_to
from api.serializers import (
    AgreementQuerySerializer,
    CodebookSerializer,
    CodebookVersionDetailSerializer,
    IssueDetailSerializer,
    IssueSerializer,
    StudySerializer,
)
from corpus.models import Issue
from labeling.agreement_report import LabelTableFilter, study_agreement_report
from labeling.models import Membership, Study, StudyItem
from labeling.selectors import study_list_for_user, study_roles
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import Category, CodebookVersion, Dimension
from taxonomy.selectors import codebook_list


class CodebookViewSet(viewsets.ReadOnlyModelViewSet):
    """Codebooks and their versions. Any signed-in user may read them."""

    serializer_class = CodebookSerializer

    def get_queryset(self):
        return codebook_list()


class CodebookVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """One codebook version with its dimensions and categories."""

    serializer_class = CodebookVersionDetailSerializer

    def get_queryset(self):
        return CodebookVersion.objects.select_related("codebook").prefetch_related(
            Prefetch(
                "dimensions",
                queryset=Dimension.objects.order_by("position").prefetch_related(
                    Prefetch(
                        "categories",
                        queryset=Category.objects.select_related("parent").order_by("position"),
                    )
                ),
            )
        )


class IssueViewSet(viewsets.ReadOnlyModelViewSet):
    """Issues of the corpus. A superuser sees all; others see the issues of the studies they
    manage or adjudicate, and the issues assigned to them."""

    filterset_fields = ["repository__owner", "repository__name", "state", "is_pull_request"]

    def get_serializer_class(self):
        return IssueDetailSerializer if self.action == "retrieve" else IssueSerializer

    queryset = Issue.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        issues = Issue.objects.select_related("repository").order_by("repository_id", "number")
        if self.action == "retrieve":
            issues = issues.prefetch_related("comments", "linked_fixes")
        user = self.request.user
        if getattr(self, "swagger_fake_view", False):
            return Issue.objects.none()
        if user.is_superuser:
            return issues
        overseen = StudyItem.objects.filter(
            issue=OuterRef("pk"),
            study__memberships__user=user,
            study__memberships__role__in=[Membership.Role.MANAGER, Membership.Role.ADJUDICATOR],
        )
        assigned = StudyItem.objects.filter(issue=OuterRef("pk"), assignments__annotator=user)
        return issues.filter(Exists(overseen) | Exists(assigned))


class StudyViewSet(viewsets.ReadOnlyModelViewSet):
    """Studies the user is a member of."""

    serializer_class = StudySerializer
    lookup_field = "slug"

    queryset = Study.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Study.objects.none()
        return study_list_for_user(user=self.request.user).prefetch_related("rounds")

    @extend_schema(
        parameters=[AgreementQuerySerializer],
        responses={200: OpenApiTypes.OBJECT},
        description=(
            "Agreement per dimension: percent agreement, Cohen's kappa per pair and mean (with "
            "bootstrap 95% intervals when bootstrap > 0), Fleiss' kappa, Krippendorff's alpha, "
            "per-category kappa. Managers and adjudicators of the study only."
        ),
    )
    @action(detail=True, methods=["get"])
    def agreement(self, request, slug=None):
        study = self.get_object()
        if not study_roles(study=study, user=request.user) & {
            Membership.Role.MANAGER,
            Membership.Role.ADJUDICATOR,
        }:
            raise PermissionDenied("Agreement is for the study's managers and adjudicators.")
        query = AgreementQuerySerializer(
            data={
                **request.query_params.dict(),
                "dimension": request.query_params.getlist("dimension"),
            }
            if "dimension" in request.query_params
            else request.query_params.dict()
        )
        query.is_valid(raise_exception=True)
        params = query.validated_data
        report = study_agreement_report(
            study=study,
            dimension_keys=params.get("dimension"),
            filters=LabelTableFilter(
                round_name=params.get("round"),
                repository=params.get("repository"),
                submitted_after=params.get("submitted_after"),
                submitted_before=params.get("submitted_before"),
            ),
            level=params.get("level"),
            weights=params.get("weights"),
            bootstrap=params["bootstrap"],
            seed=params["seed"],
        )
        return Response(report)

    @extend_schema(request=None, responses={200: AssignmentSerializer, 204: None})
    @action(detail=True, methods=["post"])
    def next(self, request, slug=None):
        """Your next item in this study (your drafts first, then to-do, then a newly claimed
        item that still needs annotators); 204 when nothing is left."""
        study = self.get_object()
        assignment = item_next_for_annotator(study=study, user=request.user)
        if assignment is None:
            return Response(status=204)
        return Response(
            AssignmentSerializer(
                assignments_visible_to(request.user).get(pk=assignment.pk),
                context={"request": request},
            ).data
        )
