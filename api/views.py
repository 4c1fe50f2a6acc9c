"""Thin DRF views over the selectors. What a user may see is decided in labeling.access: the
querysets come from its selectors (an object outside them is a 404) and the role checks from
api.permissions."""

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.agreement import AgreementReportSerializer
from api.assignments import AssignmentSerializer, assignments_visible_to
from api.filters import IssueFilter
from api.imports import StudyImportActions
from api.invitations import StudyInvitationActions
from api.lifecycle import StudyLifeActions, StudyRoundActions
from api.pagination import UncountedPagination
from api.permissions import IsStudyAdjudicator, IsStudyManager, IsStudyMember, StudyLookup
from api.report import StudyReportActions
from api.resolutions import ERRORS, StudyResolutionActions
from api.serializers import (
    ISSUE_ROW_FIELDS,
    AgreementQuerySerializer,
    CodebookSerializer,
    CodebookVersionDetailSerializer,
    IssueDetailSerializer,
    IssueSerializer,
    StudyDetailSerializer,
    StudySerializer,
    issue_rows,
)
from api.setup import StudySetupActions
from corpus.models import Issue
from labeling.access import (
    codebook_list_visible_to,
    codebook_version_list_visible_to,
    issue_list_visible_to,
)
from labeling.agreement_report import (
    LabelTableFilter,
    agreement_query_check,
    study_agreement_report,
)
from labeling.services.studies import item_next_for_annotator
from taxonomy.models import Category, Codebook, CodebookVersion, Dimension


class CodebookViewSet(viewsets.ReadOnlyModelViewSet):
    """Codebooks and their versions. Any signed-in user may read them."""

    serializer_class = CodebookSerializer

    queryset = Codebook.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        return codebook_list_visible_to(user=self.request.user)


class CodebookVersionViewSet(viewsets.ReadOnlyModelViewSet):
    """One codebook version with its dimensions and categories."""

    serializer_class = CodebookVersionDetailSerializer

    queryset = CodebookVersion.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        versions = codebook_version_list_visible_to(user=self.request.user)
        return versions.prefetch_related(
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
    """Issues of the corpus: all for a superuser; else those of the studies the user manages or
    adjudicates, and those assigned to them (labeling.access.issue_list_visible_to)."""

    filterset_class = IssueFilter
    pagination_class = UncountedPagination
    queryset = Issue.objects.none()  # for the schema; requests use get_queryset

    def get_serializer_class(self):
        return IssueDetailSerializer if self.action == "retrieve" else IssueSerializer

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Issue.objects.none()
        issues = issue_list_visible_to(user=self.request.user).order_by("repository_id", "number")
        if self.action == "retrieve":
            return issues.select_related("repository").prefetch_related("comments", "linked_fixes")
        return issues

    def list(self, request, *args, **kwargs):
        issues = self.filter_queryset(self.get_queryset())
        page = self.paginate_queryset(issues.values(*ISSUE_ROW_FIELDS))
        return self.get_paginated_response(issue_rows(page))


class StudyViewSet(
    StudyLookup,
    StudySetupActions,
    StudyResolutionActions,
    StudyReportActions,
    StudyLifeActions,
    StudyRoundActions,
    StudyInvitationActions,
    StudyImportActions,
    viewsets.ReadOnlyModelViewSet,
):
    """Studies the user is a member of (all for a superuser), with their agreement report, the
    next item to label, the setup routes (api.setup: create, preview, dashboard, members) and
    the resolution routes (api.resolutions)."""

    serializer_class = StudySerializer
    permission_classes = [IsAuthenticated, IsStudyMember]

    def get_serializer_class(self):
        return StudyDetailSerializer if self.action == "retrieve" else StudySerializer

    @extend_schema(
        parameters=[AgreementQuerySerializer],
        responses={200: AgreementReportSerializer, **ERRORS},
        description=(
            "Agreement per dimension: percent agreement, Cohen's kappa per pair (with `counted`) "
            "and its plain and n-weighted mean over the pairs sharing at least `min_pair_items` "
            "items (default 10; bootstrap 95% intervals when bootstrap > 0, at most 2000 "
            "resamples), Fleiss' kappa, Krippendorff's alpha, per-category kappa, and warnings "
            "(fewer than 30 items, pairs left out, no pair counted). A dimension, round or "
            "repository the study does not have is a 400. Managers and adjudicators of the "
            "study only."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        permission_classes=[IsAuthenticated, IsStudyMember & (IsStudyManager | IsStudyAdjudicator)],
    )
    def agreement(self, request, slug=None):
        study = self.get_object()
        # A text parameter given empty is not given, as DRF reads a query string elsewhere
        # (and as the schema says); an empty time or choice stays an error.
        text = {
            name
            for name, field in AgreementQuerySerializer().fields.items()
            if isinstance(field, serializers.CharField)
        }
        given = {
            key: value
            for key, value in request.query_params.dict().items()
            if value or key not in text
        }
        if "dimension" in request.query_params:
            given["dimension"] = request.query_params.getlist("dimension")
        query = AgreementQuerySerializer(data=given)
        query.is_valid(raise_exception=True)
        params = query.validated_data
        filters = LabelTableFilter(
            round_name=params.get("round"),
            repository=params.get("repository"),
            submitted_after=params.get("submitted_after"),
            submitted_before=params.get("submitted_before"),
        )
        # An unknown dimension, round or repository is a 400 naming it, not an empty report.
        agreement_query_check(
            study=study,
            dimension_keys=params.get("dimension"),
            filters=filters,
            bootstrap=params["bootstrap"],
            min_pair_items=params["min_pair_items"],
            weights=params.get("weights"),
        )
        report = study_agreement_report(
            study=study,
            dimension_keys=params.get("dimension"),
            filters=filters,
            level=params.get("level"),
            weights=params.get("weights"),
            bootstrap=params["bootstrap"],
            seed=params["seed"],
            min_pair_items=params["min_pair_items"],
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
