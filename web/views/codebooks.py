"""Codebook pages: every version with its dimensions, categories and definitions."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from labeling.access import codebook_list_visible_to, codebook_version_get_visible_to
from taxonomy.selectors import (
    category_depths,
    dimensions_with_categories,
)


@login_required
def codebooks(request: HttpRequest) -> HttpResponse:
    """Every codebook with its versions; a version's page is the codebook at hand."""
    return render(
        request, "web/codebooks.html", {"codebooks": codebook_list_visible_to(user=request.user)}
    )


@login_required
def codebook_version(request: HttpRequest, version_id: int) -> HttpResponse:
    version = codebook_version_get_visible_to(version_id=version_id, user=request.user)
    if version is None:
        raise Http404("No such codebook version.")
    dimensions = dimensions_with_categories(version_id=version.id)
    for dimension in dimensions:
        depth = category_depths(dimension.categories.all())
        for category in dimension.categories.all():
            category.depth = depth[category.id]
    return render(
        request, "web/codebook_version.html", {"version": version, "dimensions": dimensions}
    )
