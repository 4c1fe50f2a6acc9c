"""Sources and sync runs over the API: list and add sources, start a sync, watch a run.

Sources feed every study, so the endpoints are for superusers and managers of at least one
study; what each call does is decided in the ingest modules (sources, follows, dispatch).
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.permissions import CanManageSources
from ingest.dispatch import sync_request
from ingest.follows import study_follow_create
from ingest.models import MAX_INTERVAL_MINUTES, MIN_INTERVAL_MINUTES, Source, StudyFollow, SyncRun
from ingest.selectors import runs_latest, source_list, sync_run_list
from ingest.sources import source_add, source_delete
from labeling.access import study_get_visible_to, study_list_visible_to


class SyncRunSerializer(serializers.ModelSerializer):
    source = serializers.PrimaryKeyRelatedField(read_only=True)
    repository = serializers.CharField(source="source.repository.full_name", read_only=True)
    counts = serializers.DictField(
        child=serializers.IntegerField(),
        read_only=True,
        help_text="what the run did so far: seen, created, updated, unchanged, pages, ...",
    )
    requested_by = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        help_text="who asked for the run (Sync now, the API); null for the schedule and the "
        "command line",
    )

    class Meta:
        model = SyncRun
        fields = [
            "id", "source", "repository", "status", "trigger", "requested_by", "queued_at",
            "started_at", "finished_at", "heartbeat_at", "progress", "counts", "requests_used",
            "rate_limit_remaining", "rate_limit_reset", "attempts", "error", "task_id",
        ]  # fmt: skip
        read_only_fields = fields


class StudyFollowSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    labels = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = StudyFollow
        fields = ["id", "study", "state", "labels", "requires_linked_fix", "created_at"]
        read_only_fields = fields


class SourceSerializer(serializers.ModelSerializer):
    repository = serializers.CharField(source="repository.full_name", read_only=True)
    renamed_to = serializers.CharField(source="repository.renamed_to", read_only=True)
    follows = StudyFollowSerializer(many=True, read_only=True)
    latest_run = serializers.SerializerMethodField()
    labels = serializers.ListField(child=serializers.CharField(), read_only=True)
    cursor = serializers.JSONField(
        read_only=True, help_text="the sync's own bookmark (opaque: where the next sync starts)"
    )

    class Meta:
        model = Source
        fields = [
            "id", "repository", "renamed_to", "state", "labels", "since",
            "include_pull_requests", "interval_minutes", "enabled", "cursor", "last_synced_at",
            "reconciled_at", "created_at", "follows", "latest_run",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(SyncRunSerializer(allow_null=True))
    def get_latest_run(self, source: Source) -> dict | None:
        run = self.context.get("latest_runs", {}).get(source.pk)
        return SyncRunSerializer(run).data if run is not None else None


class SourceCreateSerializer(serializers.Serializer):
    """Types only; the rules (name format, label names, interval bounds, `since` in the past,
    no duplicate, a repository GitHub has) are the service's, so that the page shares them."""

    repository = serializers.CharField(max_length=300, help_text="OWNER/NAME")
    state = serializers.ChoiceField(choices=Source.State.choices, default=Source.State.CLOSED)
    labels = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=50
    )
    since = serializers.DateTimeField(
        required=False, allow_null=True, default=None, help_text="ISO 8601; UTC without a zone"
    )
    include_pull_requests = serializers.BooleanField(default=False)
    interval_minutes = serializers.IntegerField(
        default=60, min_value=MIN_INTERVAL_MINUTES, max_value=MAX_INTERVAL_MINUTES
    )
    enabled = serializers.BooleanField(default=True)


class StudyFollowCreateSerializer(serializers.Serializer):
    study = serializers.SlugField(help_text="the study's slug")
    state = serializers.ChoiceField(choices=StudyFollow.State.choices, default="any")
    labels = serializers.ListField(
        child=serializers.CharField(max_length=100), default=list, max_length=50
    )
    requires_linked_fix = serializers.BooleanField(default=False)
    include_existing = serializers.BooleanField(
        default=False, help_text="also add the matching issues stored already"
    )


class SourceViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """GitHub sources of the corpus, each with its latest sync run. Deleting a source removes
    its runs and the studies' follows of it; its issues stay in the corpus."""

    permission_classes = [IsAuthenticated, CanManageSources]
    serializer_class = SourceSerializer

    def get_queryset(self):
        user = self.request.user
        # A follow names its study: shown only to those who may see that study.
        return source_list(visible_studies=study_list_visible_to(user=user))

    def _context_with_runs(self, sources: list[Source]) -> dict:
        return {**self.get_serializer_context(), "latest_runs": runs_latest(sources=sources)}

    def list(self, request, *args, **kwargs):
        page = self.paginate_queryset(self.get_queryset())
        serializer = SourceSerializer(page, many=True, context=self._context_with_runs(page))
        return self.get_paginated_response(serializer.data)

    def retrieve(self, request, *args, **kwargs):
        source = self.get_object()
        return Response(SourceSerializer(source, context=self._context_with_runs([source])).data)

    @extend_schema(request=SourceCreateSerializer, responses={201: SourceSerializer})
    def create(self, request, *args, **kwargs):
        given = SourceCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        # GitHub is asked first: a repository it does not have is a 400, as on the page.
        added = source_add(**given.validated_data, created_by=request.user)
        source = self.get_queryset().get(pk=added.source.pk)
        data = SourceSerializer(source, context=self._context_with_runs([source])).data
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(
        responses={
            204: None,
            409: OpenApiResponse(ErrorSerializer, description="a sync of the source is running"),
        }
    )
    def destroy(self, request, *args, **kwargs):
        source_delete(source=self.get_object())
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={202: SyncRunSerializer})
    @action(detail=True, methods=["post"])
    def sync(self, request, pk=None):
        """Start a sync, or return the one already active (never two at once)."""
        source = self.get_object()
        run = sync_request(source=source, requested_by=request.user)
        run = sync_run_list().get(pk=run.pk)
        return Response(SyncRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(request=StudyFollowCreateSerializer, responses={201: StudyFollowSerializer})
    @action(detail=True, methods=["post"])
    def follows(self, request, pk=None):
        """Let a study (that the user manages) take in the source's matching issues."""
        source = self.get_object()
        given = StudyFollowCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        options = dict(given.validated_data)
        found = study_get_visible_to(slug=options.pop("study"), user=request.user)
        if found is None:
            raise NotFound("No such study.")
        study, _ = found
        follow = study_follow_create(source=source, study=study, created_by=request.user, **options)
        return Response(StudyFollowSerializer(follow).data, status=status.HTTP_201_CREATED)


class SyncRunViewSet(viewsets.ReadOnlyModelViewSet):
    """Sync runs, newest first, with their progress and counts (`?source=ID` filters)."""

    permission_classes = [IsAuthenticated, CanManageSources]
    serializer_class = SyncRunSerializer
    filterset_fields = ["source", "status"]

    def get_queryset(self):
        return sync_run_list()
