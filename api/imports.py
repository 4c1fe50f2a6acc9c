"""Uploads over the API (multipart): an annotation CSV into a study, a codebook file. Thin: the
rules, limits and messages are labeling.services.imports', which the pages share."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from api.exception_handler import ErrorSerializer
from api.resolutions import ERRORS
from api.setup import MANAGERS
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
