from django.urls import path

from labeling import views
from labeling.sources_views import sources

urlpatterns = [
    path("", views.home, name="home"),
    path("studies/<slug:slug>/", views.study_overview, name="study_overview"),
    path("studies/<slug:slug>/queue/", views.queue, name="queue"),
    path("studies/<slug:slug>/next/", views.next_item, name="next_item"),
    path("studies/<slug:slug>/items/<int:item_id>/", views.label_item, name="label_item"),
    path(
        "studies/<slug:slug>/items/<int:item_id>/draft/",
        views.label_item_autosave,
        name="label_item_autosave",
    ),
    path("studies/<slug:slug>/agreement/", views.agreement, name="agreement"),
    path("codebooks/", views.codebooks, name="codebooks"),
    path("codebooks/versions/<int:version_id>/", views.codebook_version, name="codebook_version"),
    path("sources/", sources, name="sources"),
]
