"""Dataset exports over the API: download a study's dataset at once (CSV and JSONL streamed
from the first byte), start an export of a study, list a study's exports, follow one and
download its file. For the study's managers (superusers too): a study or an export the user may
not see is a 404, and a member of the study who is not a manager gets a 403 on its routes. What
an export does is decided in `exports` (jobs, services)."""

from django.http import FileResponse, HttpResponseBase
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import generics, mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.reverse import reverse

from api.exception_handler import ErrorSerializer
from api.permissions import IsStudyManager, IsStudyMember
from api.report import JsonForErrors
from common.exceptions import ConflictError
from exports.formats import CONTENT_TYPES
from exports.jobs import export_job_start
from exports.models import ExportJob
from exports.selectors import export_job_list_for_study, export_job_list_visible_to
from exports.services import DIRECT_PARQUET_MAX_ITEMS, dataset_export_download
from labeling.access import study_get_visible_to
from labeling.models import Study


class ExportJobSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    requested_by = serializers.CharField(
        source="requested_by.username", read_only=True, default=None, allow_null=True
    )
    percent = serializers.IntegerField(read_only=True, help_text="rows written, in percent")
    download_url = serializers.SerializerMethodField(help_text="the file, once the job is done")

    class Meta:
        model = ExportJob
        fields = [
            "id", "study", "format", "raw", "pseudonymise", "status", "rows_done", "rows_total",
            "percent", "requested_by", "created_at", "started_at", "finished_at", "error",
            "download_url",
        ]  # fmt: skip
        read_only_fields = fields

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_download_url(self, job: ExportJob) -> str | None:
        if job.status != ExportJob.Status.DONE or not job.file:
            return None
        return reverse("export-download", args=[job.pk], request=self.context.get("request"))


class ExportJobCreateSerializer(serializers.Serializer):
    format = serializers.ChoiceField(
        choices=ExportJob.Format.choices, default=ExportJob.Format.JSONL
    )
    raw = serializers.BooleanField(default=False, help_text="every annotator's labels too")
    pseudonymise = serializers.BooleanField(
        default=False, help_text="annotators named annotator-01, ... (with raw)"
    )


def _file_responses(description: str) -> dict:
    return {
        (200, content_type.split(";")[0]): OpenApiResponse(
            OpenApiTypes.BINARY, description=f"{description} ({export_format})"
        )
        for export_format, content_type in CONTENT_TYPES.items()
    }


class _StudyExports:
    """The study of the URL, for its managers: another's study is a 404, another role a 403."""

    permission_classes = [IsAuthenticated, IsStudyMember & IsStudyManager]

    def _study(self) -> Study:
        found = study_get_visible_to(slug=self.kwargs["slug"], user=self.request.user)
        if found is None:
            raise NotFound("No such study.")
        study, _ = found
        self.check_object_permissions(self.request, study)
        return study


class StudyExportViewSet(_StudyExports, viewsets.GenericViewSet):
    """`/api/studies/{slug}/exports/`: a study's exports, newest first, and starting one."""

    serializer_class = ExportJobSerializer
    queryset = ExportJob.objects.none()  # for the schema; requests use the study's jobs

    @extend_schema(responses=ExportJobSerializer(many=True))
    def list(self, request, slug=None):
        page = self.paginate_queryset(export_job_list_for_study(study=self._study()))
        return self.get_paginated_response(
            ExportJobSerializer(page, many=True, context=self.get_serializer_context()).data
        )

    @extend_schema(request=ExportJobCreateSerializer, responses={202: ExportJobSerializer})
    def create(self, request, slug=None):
        """Start an export; the job runs in the background (poll `/api/exports/{id}/`)."""
        study = self._study()
        given = ExportJobCreateSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        job = export_job_start(study=study, user=request.user, **given.validated_data)
        job = export_job_list_visible_to(user=request.user).get(pk=job.pk)
        return Response(
            ExportJobSerializer(job, context=self.get_serializer_context()).data,
            status=status.HTTP_202_ACCEPTED,
        )


class StudyDatasetView(_StudyExports, generics.GenericAPIView):
    """`/api/studies/{slug}/dataset/`: the study's dataset at once, as the export page's
    Download now sends it."""

    # `?format=` names the file (csv, jsonl, parquet), not a DRF renderer; errors are JSON.
    content_negotiation_class = JsonForErrors
    serializer_class = ExportJobCreateSerializer

    @extend_schema(
        operation_id="studies_dataset_retrieve",
        parameters=[ExportJobCreateSerializer],
        responses={
            **_file_responses("the dataset"),
            400: OpenApiResponse(
                ErrorSerializer,
                description=f"a bad option, or Parquet of more than {DIRECT_PARQUET_MAX_ITEMS:,} "
                "items (start an export instead)",
            ),
        },
        description=(
            "The study's dataset (one row per item; with `raw`, every annotator's labels) as a "
            "file to download. CSV and JSONL of any size are streamed from the first byte while "
            "the rows are read, a few thousand items at a time, so the first rows arrive at "
            "once and memory stays flat (100,000 items in some 10 to 15 s). Parquet is written "
            f"whole before it is sent: up to {DIRECT_PARQUET_MAX_ITEMS:,} items here, a larger "
            "study through `POST /api/studies/{slug}/exports/`. Managers of the study."
        ),
    )
    def get(self, request, slug=None) -> HttpResponseBase:
        study = self._study()
        given = ExportJobCreateSerializer(data=request.query_params.dict())
        given.is_valid(raise_exception=True)
        download = dataset_export_download(study=study, **given.validated_data)
        return download.response()


class ExportJobViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """`/api/exports/{id}/`: an export's status and progress, and its file once done."""

    permission_classes = [IsAuthenticated]
    serializer_class = ExportJobSerializer
    queryset = ExportJob.objects.none()  # for the schema; requests use get_queryset

    def get_queryset(self):
        return export_job_list_visible_to(user=self.request.user)

    @extend_schema(
        responses={
            **_file_responses("the dataset file"),
            409: OpenApiResponse(ErrorSerializer, description="the export is not done"),
        }
    )
    @action(detail=True, methods=["get"])
    def download(self, request, pk=None):
        """The export's file (CSV, JSONL or Parquet); 409 while it is not done."""
        job = self.get_object()
        if job.status != ExportJob.Status.DONE or not job.file:
            raise ConflictError(
                f"Export {job.pk} is {job.get_status_display().lower()}, not done.",
                {"status": job.status},
            )
        return FileResponse(
            job.file.open("rb"),
            as_attachment=True,
            filename=job.filename,
            content_type=CONTENT_TYPES[job.format],
        )
