"""Uploads over the API (multipart): an annotation CSV into a study, a codebook file, a dataset
file to restore a study from. Thin: the rules, limits and messages are
labeling.services.imports' and exports.uploads', which the pages share."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.exception_handler import ErrorSerializer
from api.resolutions import ERRORS
from api.setup import MANAGERS, CanCreateStudy
from exports.models import ExportJob
from exports.uploads import dataset_upload_limit, dataset_upload_restore
from labeling.services.imports import (
    ANNOTATION_FILE_MAX_BYTES,
    CODEBOOK_FILE_MAX_BYTES,
    codebook_upload,
    study_annotations_upload,
)


class _Upload(serializers.Serializer):
    limit = 0

    def validate_file(self, value):
        if value.size > self.limit:
            raise serializers.ValidationError(f"file is larger than {self.limit} bytes")
        return value


class AnnotationUploadSerializer(_Upload):
    limit = ANNOTATION_FILE_MAX_BYTES
    file = serializers.FileField(help_text="CSV: issue,annotator,dimension,labels")
    create_users = serializers.BooleanField(
        default=False, help_text="create unknown annotators as inactive accounts"
    )


class AnnotationImportReportSerializer(serializers.Serializer):
    rows = serializers.IntegerField()
    annotations_written = serializers.IntegerField()
    items_added = serializers.IntegerField()
    users_created = serializers.IntegerField()


class CodebookUploadSerializer(_Upload):
    limit = CODEBOOK_FILE_MAX_BYTES
    file = serializers.FileField(help_text="JSON, or YAML when named .yaml or .yml")


class CodebookLoadedSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="version.pk")
    codebook = serializers.CharField(source="version.codebook.name")
    label = serializers.CharField(source="version.label")
    status = serializers.CharField(source="version.status")
    written = serializers.BooleanField(help_text="false: the same content was loaded already")


class StudyImportActions:
    """The annotation import, mixed into StudyViewSet."""

    @extend_schema(
        request={"multipart/form-data": AnnotationUploadSerializer},
        responses={200: AnnotationImportReportSerializer, **ERRORS},
        description=(
            "Import an annotation CSV as `manage.py import_annotations` does: rows become "
            "submitted annotations; when any row is wrong nothing is imported and the 400's "
            "`details.errors` lists [line, message] pairs. At most 50 MB. Logged. Managers of "
            "the study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="annotation-import",
        url_name="annotation-import",
        permission_classes=MANAGERS,
        parser_classes=[MultiPartParser],
    )
    def annotation_import(self, request, slug=None):
        study = self.get_object()
        body = AnnotationUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        report = study_annotations_upload(
            study=study,
            user=request.user,
            content=body.validated_data["file"].read(),
            create_users=body.validated_data["create_users"],
        )
        return Response(AnnotationImportReportSerializer(report).data)


class CodebookImportView(APIView):
    permission_classes = [IsAuthenticated]
    parser_classes = [MultiPartParser]

    @extend_schema(
        request={"multipart/form-data": CodebookUploadSerializer},
        responses={
            201: CodebookLoadedSerializer,
            400: ERRORS[400],
            403: OpenApiResponse(ErrorSerializer, description="you may not load it"),
        },
        description=(
            "Load a codebook file as `manage.py load_codebook` does, as a draft: a new codebook "
            "(for those who set studies up) or a new version of the codebook it names (for "
            "its editors). Problems are listed in `details.errors`; nothing is stored then. At "
            "most 2 MB."
        ),
    )
    def post(self, request):
        body = CodebookUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        loaded = codebook_upload(user=request.user, content=upload.read(), filename=upload.name)
        return Response(CodebookLoadedSerializer(loaded).data, status=status.HTTP_201_CREATED)


class DatasetUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="a dataset file: JSONL, CSV or Parquet")
    study = serializers.SlugField(
        required=False, max_length=100, help_text="restore under this slug instead of the file's"
    )
    format = serializers.ChoiceField(
        # The export's choices: one enum of formats in the schema.
        choices=ExportJob.Format.choices,
        required=False,
        help_text="default: from the file's extension",
    )

    def validate_file(self, value):
        # The service refuses it too; said here, it is a field's error like the others.
        limit = dataset_upload_limit()
        if value.size > limit:
            raise serializers.ValidationError(f"file is larger than {limit} bytes")
        return value


class RestoreReportSerializer(serializers.Serializer):
    study = serializers.SlugField(help_text="the restored study's slug")
    rows = serializers.IntegerField(help_text="items restored")
    issues_created = serializers.IntegerField(help_text="issues the instance did not hold")
    resolutions = serializers.IntegerField(help_text="gold labels")
    annotations = serializers.IntegerField(help_text="annotators' labels")
    users_created = serializers.IntegerField(help_text="annotators created as inactive accounts")


class StudyRestoreView(APIView):
    permission_classes = [IsAuthenticated, CanCreateStudy]
    parser_classes = [MultiPartParser]

    @extend_schema(
        operation_id="studies_restore",
        request={"multipart/form-data": DatasetUploadSerializer},
        responses={
            201: RestoreReportSerializer,
            400: OpenApiResponse(
                ErrorSerializer,
                description="not restored: the message, and in `details.errors` [line or row, "
                "message] pairs; `details.place` says which",
            ),
            403: OpenApiResponse(ErrorSerializer, description="you may not set studies up"),
        },
        description=(
            "Restore a study from its dataset file as `manage.py import_dataset` does, in one "
            "transaction: when any row is wrong, or the slug exists, nothing is stored. You "
            "become the restored study's manager. For superusers and users given the add-study "
            "permission. At most DATASET_UPLOAD_MAX_BYTES (50 MB by default)."
        ),
    )
    def post(self, request):
        body = DatasetUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        report = dataset_upload_restore(
            user=request.user,
            stream=upload.file,
            size=upload.size,
            filename=upload.name,
            file_format=body.validated_data.get("format"),
            study_slug=body.validated_data.get("study"),
        )
        return Response(RestoreReportSerializer(report).data, status=status.HTTP_201_CREATED)
