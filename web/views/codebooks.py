"""Codebook pages: every version with its dimensions, categories and definitions."""

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from taxonomy.models import CodebookVersion
from taxonomy.selectors import (
    category_depths,
    codebook_list,
    dimensions_with_categories,
)


@login_required
def codebooks(request: HttpRequest) -> HttpResponse:
    """Every codebook with its versions; a version's page is the codebook at hand."""
    return render(request, "web/codebooks.html", {"codebooks": codebook_list()})


@login_required
def codebook_version(request: HttpRequest, version_id: int) -> HttpResponse:
    version = get_object_or_404(CodebookVersion.objects.select_related("codebook"), pk=version_id)
    dimensions = dimensions_with_categories(version_id=version.id)
    for dimension in dimensions:
        depth = category_depths(dimension.categories.all())
        for category in dimension.categories.all():
            category.depth = depth[category.id]
    return render(
        request, "web/codebook_version.html", {"version": version, "dimensions": dimensions}
    )
