from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter

from api import views
from api.assignments import AssignmentViewSet
from api.codebooks import urlpatterns as codebook_urlpatterns
from api.exports import ExportJobViewSet, StudyDatasetView, StudyExportViewSet
from api.imports import CodebookImportView, StudyRestoreView
from api.invitations import AccountView, InvitationAcceptView, InvitationJoinView
from api.issue_imports import StudyIssueImportViewSet
from api.machines import StudyMachineViewSet
from api.queue import StudyQueueViewSet
from api.sources import SourceViewSet, SyncRunViewSet
from api.tokens import ApiTokenViewSet

router = DefaultRouter()
router.register("codebooks", views.CodebookViewSet, basename="codebook")
router.register("codebook-versions", views.CodebookVersionViewSet, basename="codebook-version")
router.register("issues", views.IssueViewSet, basename="issue")
router.register("studies", views.StudyViewSet, basename="study")
router.register("assignments", AssignmentViewSet, basename="assignment")
router.register("sources", SourceViewSet, basename="source")
router.register("sync-runs", SyncRunViewSet, basename="sync-run")
router.register("exports", ExportJobViewSet, basename="export")
router.register("tokens", ApiTokenViewSet, basename="api-token")
# Member routes under studies/{slug}/ (overview, queue, an item to label), beside StudyViewSet's.
router.register("studies", StudyQueueViewSet, basename="study-queue")
router.register("studies", StudyMachineViewSet, basename="study-machines")

urlpatterns = [
    *codebook_urlpatterns,
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path(
        "studies/<slug:slug>/exports/",
        StudyExportViewSet.as_view({"get": "list", "post": "create"}),
        name="study-exports",
    ),
    path("studies/<slug:slug>/dataset/", StudyDatasetView.as_view(), name="study-dataset"),
    path(
        "studies/<slug:slug>/issue-imports/",
        StudyIssueImportViewSet.as_view({"get": "list", "post": "create"}),
        name="study-issue-imports",
    ),
    path(
        "studies/<slug:slug>/issue-imports/<int:pk>/",
        StudyIssueImportViewSet.as_view({"get": "retrieve"}),
        name="study-issue-import",
    ),
    path("invitations/accept/", InvitationAcceptView.as_view(), name="invitation-accept"),
    path("invitations/join/", InvitationJoinView.as_view(), name="invitation-join"),
    path("codebooks/import/", CodebookImportView.as_view(), name="codebook-import"),
    # Before the router's studies/{slug}/.
    path("studies/restore/", StudyRestoreView.as_view(), name="study-restore"),
    path("account/", AccountView.as_view(), name="account"),
    path("", include(router.urls)),
]
