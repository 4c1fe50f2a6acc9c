from django.urls import path, register_converter

from common.converters import IdConverter
from web.views import (
    account,
    agreement,
    codebooks,
    imports,
    invitations,
    lifecycle,
    machines,
    resolution,
    setup,
    sources,
    studies,
)
from web.views import export as export_views
from web.views import report as report_views

register_converter(IdConverter, "id")

urlpatterns = [
    path("", studies.home, name="home"),
    path("studies/new/", setup.study_new, name="study_new"),
    path("studies/new/preview/", setup.study_new_preview, name="study_new_preview"),
    path("studies/restore/", imports.study_restore, name="study_restore"),
    path("studies/<slug:slug>/", studies.study_overview, name="study_overview"),
    path("studies/<slug:slug>/members/", setup.study_members, name="study_members"),
    path("studies/<slug:slug>/status/", lifecycle.study_status_change, name="study_status_change"),
    path("studies/<slug:slug>/activity/", lifecycle.study_activity, name="study_activity"),
    path("studies/<slug:slug>/rounds/", lifecycle.study_rounds, name="study_rounds"),
    path(
        "studies/<slug:slug>/invitations/",
        invitations.study_invitations,
        name="study_invitations",
    ),
    path("invitations/<str:token>/", invitations.invitation_open, name="invitation_open"),
    path("account/", invitations.account, name="account"),
    path("studies/<slug:slug>/import/", imports.study_import, name="study_import"),
    path(
        "studies/<slug:slug>/import/issues/",
        imports.study_issue_import,
        name="study_issue_import",
    ),
    path(
        "studies/<slug:slug>/import/issues/jobs/",
        imports.study_issue_import_jobs,
        name="study_issue_import_jobs",
    ),
    path("codebooks/import/", imports.codebook_import, name="codebook_import"),
    path("studies/<slug:slug>/queue/", studies.queue, name="queue"),
    path("studies/<slug:slug>/next/", studies.next_item, name="next_item"),
    path("studies/<slug:slug>/items/<id:item_id>/", studies.label_item, name="label_item"),
    path(
        "studies/<slug:slug>/items/<id:item_id>/draft/",
        studies.label_item_autosave,
        name="label_item_autosave",
    ),
    path(
        "studies/<slug:slug>/items/<id:item_id>/resolve/",
        resolution.item_resolve,
        name="item_resolve",
    ),
    path(
        "studies/<slug:slug>/items/<id:item_id>/discussion/",
        resolution.item_discussion,
        name="item_discussion",
    ),
    path(
        "studies/<slug:slug>/items/<id:item_id>/upstream-review/",
        resolution.upstream_review,
        name="item_upstream_review",
    ),
    path("studies/<slug:slug>/agreement/", agreement.agreement, name="agreement"),
    path("studies/<slug:slug>/report/", report_views.report, name="report"),
    path("studies/<slug:slug>/machines/", machines.study_machines, name="study_machines"),
    path(
        "studies/<slug:slug>/machines/runs/<id:run_id>/",
        machines.machine_run,
        name="machine_run",
    ),
    path("studies/<slug:slug>/disagreements/", resolution.disagreements, name="disagreements"),
    path("studies/<slug:slug>/export/", export_views.study_export, name="study_export"),
    path(
        "studies/<slug:slug>/export/jobs/",
        export_views.study_export_jobs,
        name="study_export_jobs",
    ),
    path(
        "studies/<slug:slug>/export/jobs/<id:job_id>/download/",
        export_views.export_job_download,
        name="export_job_download",
    ),
    path(
        "studies/<slug:slug>/export/machines/",
        export_views.study_export_machines,
        name="study_export_machines",
    ),
    path(
        "studies/<slug:slug>/export/activity/",
        export_views.study_activity_download,
        name="study_activity_download",
    ),
    path(
        "studies/<slug:slug>/export/download/",
        export_views.study_export_download,
        name="study_export_download",
    ),
    path("codebooks/", codebooks.codebooks, name="codebooks"),
    path(
        "codebooks/versions/<id:version_id>/",
        codebooks.codebook_version,
        name="codebook_version",
    ),
    path(
        "codebooks/versions/<id:version_id>/draft/",
        codebooks.codebook_draft_new,
        name="codebook_draft_new",
    ),
    path("codebooks/versions/<id:version_id>/edit/", codebooks.codebook_edit, name="codebook_edit"),
    path(
        "codebooks/versions/<id:version_id>/export/",
        codebooks.codebook_export,
        name="codebook_export",
    ),
    path("codebooks/diff/", codebooks.codebook_diff_page, name="codebook_diff"),
    path("studies/<slug:slug>/codebook/", codebooks.study_codebook, name="study_codebook"),
    path("studies/<slug:slug>/proposals/", codebooks.study_proposals_page, name="study_proposals"),
    path("studies/<slug:slug>/recheck/", codebooks.study_recheck, name="study_recheck"),
    path("sources/", sources.sources, name="sources"),
    path("account/tokens/", account.account_tokens, name="account_tokens"),
]
