"""Issue dumps uploaded into a study over the API: `/api/studies/{slug}/issue-imports/` (list,
upload) and `/api/studies/{slug}/issue-imports/{id}/` (status, progress, the lines with
errors). For the study's managers: a study the user may not see is a 404, its other members get
a 403. What an import does is decided in `ingest` (dispatch, issue_uploads)."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.permissions import IsStudyManager, IsStudyMember
from ingest.dispatch import issue_upload_start
from ingest.issue_uploads import issue_upload_limit
from ingest.models import IssueImportJob
from ingest.selectors import issue_import_job_get, issue_import_jobs
from labeling.access import study_get_visible_to
from labeling.models import Study


class IssueImportJobSerializer(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    requested_by = serializers.CharField(
        source="requested_by.username", read_only=True, default=None, allow_null=True
    )
    percent = serializers.IntegerField(read_only=True, help_text="lines read, in percent")
    errors = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField(), min_length=2, max_length=2),
        read_only=True,
        help_text="[line, message] pairs in line order, the messages of `import_issues`; at "
        f"most {IssueImportJob.ERRORS_KEPT} (errors_total counts them all)",
    )

    class Meta:
        model = IssueImportJob
        fields = [
            "id", "study", "file_name", "status", "lines_total", "lines_done", "lines_accepted",
            "percent", "issues_created", "issues_updated", "items_added", "errors",
            "errors_total", "error", "requested_by", "created_at", "started_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = fields


class IssueDumpUploadSerializer(serializers.Serializer):
    file = serializers.FileField(
        help_text="GitHub REST issue objects: JSONL, or a JSON array (as `import_issues` reads)"
    )

    def validate_file(self, value):
        limit = issue_upload_limit()
        if value.size > limit:
            raise serializers.ValidationError(f"file is larger than {limit} bytes")
        return value


class StudyIssueImportViewSet(viewsets.GenericViewSet):
    """A study's issue imports, newest first; uploading one; following one."""

    permission_classes = [IsAuthenticated, IsStudyMember & IsStudyManager]
    serializer_class = IssueImportJobSerializer
    queryset = IssueImportJob.objects.none()  # for the schema; requests use the study's jobs
    pagination_class = None
    parser_classes = [MultiPartParser]

    def _study(self) -> Study:
        found = study_get_visible_to(slug=self.kwargs["slug"], user=self.request.user)
        if found is None:
            raise NotFound("No such study.")
        study, _ = found
        self.check_object_permissions(self.request, study)
        return study

    @extend_schema(
        responses={200: IssueImportJobSerializer(many=True)},
        description="The study's latest issue imports (ten), newest first.",
    )
    def list(self, request, slug=None):
        jobs = issue_import_jobs(study=self._study())
        return Response(IssueImportJobSerializer(jobs, many=True).data)

    @extend_schema(
        request={"multipart/form-data": IssueDumpUploadSerializer},
        responses={
            202: IssueImportJobSerializer,
            400: OpenApiResponse(ErrorSerializer, description="no file, or one too large"),
            403: OpenApiResponse(ErrorSerializer, description="your role does not allow it"),
            404: OpenApiResponse(ErrorSerializer, description="no such study for you"),
            409: OpenApiResponse(ErrorSerializer, description="the study is closed"),
        },
        description=(
            "Upload an issue dump into the study; it is imported in the background as "
            "`manage.py import_issues` imports it (lines that fail are skipped and listed), and "
            "its issues, not its pull requests, join the study's last round. Follow it at "
            "`/api/studies/{slug}/issue-imports/{id}/`. At most ISSUE_UPLOAD_MAX_BYTES (100 MB "
            "by default). Managers of the study."
        ),
    )
    def create(self, request, slug=None):
        study = self._study()
        body = IssueDumpUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        upload = body.validated_data["file"]
        job = issue_upload_start(
            study=study, user=request.user, stream=upload, size=upload.size, filename=upload.name
        )
        job = issue_import_job_get(study=study, job_id=job.pk)
        return Response(IssueImportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        responses={
            200: IssueImportJobSerializer,
            404: OpenApiResponse(ErrorSerializer, description="no such import of this study"),
        },
        description="An issue import's status, progress and lines with errors.",
    )
    def retrieve(self, request, slug=None, pk=None):
        job = issue_import_job_get(study=self._study(), job_id=pk)
        if job is None:
            raise NotFound("No such issue import.")
        return Response(IssueImportJobSerializer(job).data)
