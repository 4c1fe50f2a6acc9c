"""Codebook pages: every version with its definitions, the editor of a draft, the diff of two
versions, exports; and for a study its codebook over time (moving to a new version, agreement
per version), its annotators' proposals, and what a codebook change left to re-check.

Who may: every signed-in user reads codebooks; superusers and the managers of a study using a
codebook edit it (labeling.access.codebook_can_edit); a study's managers move it to another
version and decide its proposals (study_can_change_codebook).
"""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from common.exceptions import ApplicationError
from labeling.access import (
    MANAGER,
    codebook_can_edit,
    codebook_list_visible_to,
    codebook_version_get_visible_to,
    study_can_change_codebook,
    study_can_label,
    study_can_see_agreement,
    study_get_visible_to,
)
from labeling.codebook_history import (
    agreement_by_version,
    study_category_counts,
    study_category_counts_title,
    study_codebook_history,
    study_label_versions,
)
from labeling.models import Study
from labeling.proposals import proposal_create_category, proposal_map, study_proposals
from labeling.rereview import (
    recheck_list_for_annotator,
    recheck_summary,
    resolutions_to_recheck,
)
from labeling.services.codebook_migration import study_codebook_migrate
from taxonomy.codebook_file import EXPORT_FORMATS, codebook_spec_export
from taxonomy.diff import codebook_diff, version_chain
from taxonomy.drafts import (
    MappingEntry,
    codebook_draft_create,
    codebook_draft_discard,
    codebook_draft_for_study_version,
    codebook_draft_publish,
    codebook_draft_update,
    draft_category_add,
    draft_category_merge,
    draft_category_move,
    draft_category_remove,
    draft_category_reorder,
    draft_category_split,
    draft_category_update,
    draft_dimension_update,
    draft_mapping_declare,
    draft_problems,
)
from taxonomy.models import Category, CategoryMapping, CodebookVersion, Dimension
from taxonomy.selectors import (
    category_depths,
    codebook_version_to_spec,
    dimensions_with_categories,
)

EXPORT_TYPES = {
    "json": ("application/json", "json"),
    "yaml": ("application/yaml", "yaml"),
    "markdown": ("text/markdown; charset=utf-8", "md"),
}


def _version_or_404(request: HttpRequest, version_id: int) -> CodebookVersion:
    version = codebook_version_get_visible_to(version_id=version_id, user=request.user)
    if version is None:
        raise Http404("No such codebook version.")
    return version


def _dimensions_with_depths(version: CodebookVersion) -> list[Dimension]:
    dimensions = dimensions_with_categories(version_id=version.id)
    for dimension in dimensions:
        depth = category_depths(dimension.categories.all())
        for category in dimension.categories.all():
            category.depth = depth[category.id]
    return dimensions


@login_required
@require_safe
def codebooks(request: HttpRequest) -> HttpResponse:
    """Every codebook with its versions; a version's page is the codebook at hand."""
    books = list(codebook_list_visible_to(user=request.user))
    for book in books:
        book.can_edit = codebook_can_edit(codebook=book, user=request.user)
    return render(request, "web/codebooks.html", {"codebooks": books})


@login_required
@require_safe
def codebook_version(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _version_or_404(request, version_id)
    return render(
        request,
        "web/codebook_version.html",
        {
            "version": version,
            "dimensions": _dimensions_with_depths(version),
            "can_edit": codebook_can_edit(codebook=version.codebook, user=request.user),
            "formats": EXPORT_FORMATS,
        },
    )


@login_required
@require_POST
def codebook_draft_new(request: HttpRequest, version_id: int) -> HttpResponse:
    """Start a draft from a published version."""
    version = _version_or_404(request, version_id)
    if not codebook_can_edit(codebook=version.codebook, user=request.user):
        raise PermissionDenied("You may not edit this codebook.")
    try:
        draft = codebook_draft_create(
            version=version,
            label=request.POST.get("label", ""),
            notes=request.POST.get("notes", ""),
        )
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("codebook_version", version_id=version.id)
    messages.success(request, f"Draft {draft.label} started from version {version.label}.")
    return redirect("codebook_edit", version_id=draft.id)


# The editor: one page, one small form per change, each a POST naming its action. A category's
# forms come on demand (`?category=ID`, as an htmx fragment or opened in the page).


def _checked(request: HttpRequest, name: str) -> bool:
    return request.POST.get(name) in ("on", "true", "1")


def _category(version: CodebookVersion, request: HttpRequest) -> Category:
    category = (
        Category.objects.select_related("dimension__version__codebook", "derived_from")
        .filter(dimension__version=version, pk=_int(request.POST.get("category")))
        .first()
    )
    if category is None:
        raise ApplicationError("That category is not in this draft any more; reload the page.")
    return category


def _dimension(version: CodebookVersion, request: HttpRequest) -> Dimension:
    dimension = (
        Dimension.objects.select_related("version__codebook")
        .filter(version=version, pk=_int(request.POST.get("dimension")))
        .first()
    )
    if dimension is None:
        raise ApplicationError("That dimension is not in this draft; reload the page.")
    return dimension


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value else None
    except ValueError:
        return None


def _edit(request: HttpRequest, version: CodebookVersion, action: str) -> tuple[str, str]:
    """Carry out one editor action; returns (message, anchor to return to)."""
    post = request.POST
    if action == "version":
        codebook_draft_update(version=version, label=post.get("label"), notes=post.get("notes"))
        return "Saved.", "draft"
    if action == "dimension":
        dimension = _dimension(version, request)
        draft_dimension_update(
            dimension=dimension,
            name=post.get("name"),
            description=post.get("description"),
            multi_label=_checked(request, "multi_label"),
            required=_checked(request, "required"),
            ordinal=_checked(request, "ordinal"),
        )
        return f"{dimension.name}: settings saved.", f"dim-{dimension.key}"
    if action == "add":
        dimension = _dimension(version, request)
        category = draft_category_add(
            dimension=dimension,
            key=post.get("key", ""),
            name=post.get("name", ""),
            parent_key=post.get("parent") or None,
            definition=post.get("definition", ""),
            include=post.get("include", ""),
            exclude=post.get("exclude", ""),
            examples=post.get("examples", ""),
        )
        return f"Added {category.name}.", f"cat-{category.id}"
    if action == "merge":
        dimension = _dimension(version, request)
        source_keys = [key for key in post.getlist("sources") if key]
        draft_category_merge(
            dimension=dimension, source_keys=source_keys, target_key=post.get("target", "")
        )
        return f"Merged {', '.join(source_keys)} into {post.get('target')}.", f"dim-{dimension.key}"
    if action == "mapping":
        dimension = _dimension(version, request)
        draft_mapping_declare(
            dimension=dimension,
            entries=[
                MappingEntry(
                    from_key=post.get("from", ""),
                    kind=post.get("kind", ""),
                    to_keys=[key for key in post.getlist("to") if key],
                )
            ],
        )
        return "Mapping declared.", f"dim-{dimension.key}"
    if action == "publish":
        # Publishing is for good: the form's box must be ticked, and the server checks it, so
        # that no stray click (or a form posted without the box) publishes.
        if not _checked(request, "confirm"):
            raise ApplicationError(
                f"Tick the box to confirm: once published, version {version.label} can never "
                "change again.",
                {"confirm": ["required"]},
            )
        codebook_draft_publish(version=version)
        return f"Version {version.label} is published.", ""
    category = _category(version, request)
    anchor = f"cat-{category.id}"
    if action == "category":
        draft_category_update(
            category=category,
            key=post.get("key"),
            name=post.get("name"),
            definition=post.get("definition"),
            include=post.get("include"),
            exclude=post.get("exclude"),
            examples=post.get("examples"),
            deprecated=_checked(request, "deprecated"),
        )
        return f"Saved {category.name}.", anchor
    if action == "move":
        draft_category_move(category=category, parent_key=post.get("parent") or None)
        return f"Moved {category.name}.", anchor
    if action in ("up", "down"):
        draft_category_reorder(category=category, direction=action)
        return f"Moved {category.name} {action}.", anchor
    if action == "remove":
        draft_category_remove(category=category)
        return f"Removed {category.name}.", f"dim-{category.dimension.key}"
    if action == "split":
        parts = []
        for line in post.get("parts", "").splitlines():
            key, _, name = line.strip().partition(" ")
            if key:
                parts.append((key, name.strip() or key))
        draft_category_split(
            dimension=category.dimension,
            source_key=category.key,
            parts=parts,
            keep_source=_checked(request, "keep_source"),
        )
        return f"Split {category.name}.", f"dim-{category.dimension.key}"
    raise ApplicationError(f"Unknown action {action[:40]!r}; reload the page.")


@login_required
@require_http_methods(["GET", "POST"])
def codebook_edit(request: HttpRequest, version_id: int) -> HttpResponse:
    version = _version_or_404(request, version_id)
    if not codebook_can_edit(codebook=version.codebook, user=request.user):
        raise PermissionDenied("You may not edit this codebook.")
    if request.method == "POST":
        action = request.POST.get("action", "")
        if action == "discard":
            try:
                codebook_draft_discard(version=version)
            except ApplicationError as error:
                messages.error(request, error.message)
                return redirect("codebook_version", version_id=version.id)
            messages.success(request, f"Draft {version.label} discarded.")
            return redirect("codebooks")
        try:
            message, anchor = _edit(request, version, action)
        except ApplicationError as error:
            messages.error(request, error.message)
            status = 400
            # The forms of the category the failed change was about stay open.
            open_category = _int(request.POST.get("category"))
        else:
            messages.success(request, message)
            if action == "publish":
                return redirect("codebook_version", version_id=version.id)
            url = reverse("codebook_edit", args=[version.id])
            if anchor.startswith("cat-"):
                # Back to the category's forms, open.
                url = f"{url}?category={anchor.removeprefix('cat-')}"
            return redirect(f"{url}#{anchor}" if anchor else url)
    else:
        status = 200
        open_category = _int(request.GET.get("category"))
    if version.is_published:
        messages.info(request, f"Version {version.label} is published and cannot change.")
        return redirect("codebook_version", version_id=version.id)
    if request.htmx and request.method == "GET" and open_category is not None:
        return _category_forms(request, version, open_category)
    dimensions = list(
        Dimension.objects.filter(version=version)
        .order_by("position")
        .prefetch_related(
            Prefetch(
                "categories",
                queryset=Category.objects.select_related("derived_from").order_by("position"),
            )
        )
    )
    for dimension in dimensions:
        depth = category_depths(dimension.categories.all())
        for category in dimension.categories.all():
            category.depth = depth[category.id]
    mappings = (
        CategoryMapping.objects.filter(to_version=version)
        .exclude(kind=CategoryMapping.Kind.RENAME)
        .select_related("from_category__dimension", "to_category")
    )
    parent_keys: dict[str, list[str]] = {}
    if version.based_on_id:
        for dimension_key, key in Category.objects.filter(
            dimension__version_id=version.based_on_id
        ).values_list("dimension__key", "key"):
            parent_keys.setdefault(dimension_key, []).append(key)
    for dimension in dimensions:
        dimension.parent_keys = parent_keys.get(dimension.key, [])
        dimension.mapping_rows = [
            m for m in mappings if m.from_category.dimension.key == dimension.key
        ]
    diff = (
        codebook_diff(from_version=version.based_on, to_version=version)
        if version.based_on_id
        else None
    )
    return render(
        request,
        "web/codebook_edit.html",
        {
            "version": version,
            "dimensions": dimensions,
            "open_category": open_category,
            "problems": draft_problems(version=version),
            "diff": diff,
            "kinds": [
                CategoryMapping.Kind.MERGE,
                CategoryMapping.Kind.SPLIT,
                CategoryMapping.Kind.REMOVE,
            ],
        },
        status=status,
    )


def _category_forms(
    request: HttpRequest, version: CodebookVersion, category_id: int
) -> HttpResponse:
    """The forms of one category of the draft (htmx): the editor's page lists categories
    without them, as four forms per category made the page of a large codebook half a
    megabyte."""
    category = (
        Category.objects.select_related("dimension")
        .filter(dimension__version=version, pk=category_id)
        .first()
    )
    if category is None:
        raise Http404("That category is not in this draft any more; reload the page.")
    others = category.dimension.categories.order_by("position")
    return render(
        request,
        "web/_codebook_category_forms.html",
        {"version": version, "category": category, "others": others},
    )


@login_required
@require_safe
def codebook_diff_page(request: HttpRequest) -> HttpResponse:
    """The diff of two versions of a codebook (?from=ID&to=ID)."""
    from_version = _version_or_404(request, _int(request.GET.get("from")) or 0)
    to_version = _version_or_404(request, _int(request.GET.get("to")) or 0)
    try:
        diff = codebook_diff(from_version=from_version, to_version=to_version)
    except ApplicationError as error:
        messages.error(request, error.message)
        return redirect("codebook_version", version_id=to_version.id)
    versions = from_version.codebook.versions.order_by("created_at", "id")
    return render(
        request,
        "web/codebook_diff.html",
        {
            "diff": diff,
            "from_version": from_version,
            "to_version": to_version,
            "versions": versions,
        },
    )


@login_required
@require_safe
def codebook_export(request: HttpRequest, version_id: int) -> HttpResponse:
    """A version as a download (?format=json|yaml|markdown; &study=SLUG for a study's counts in
    the Markdown)."""
    version = _version_or_404(request, version_id)
    export_format = request.GET.get("format", "json")
    if export_format not in EXPORT_TYPES:
        raise Http404("No such format.")
    counts, counts_title = None, ""
    slug = request.GET.get("study")
    if slug and export_format == "markdown":
        found = study_get_visible_to(slug=slug, user=request.user)
        # Counts are agreement-like figures: for those who oversee the study.
        if found is None or not study_can_see_agreement(roles=found[1]):
            raise Http404("No such study.")
        counts = study_category_counts(study=found[0], roles=found[1])
        counts_title = study_category_counts_title(study=found[0], roles=found[1])
    content_type, extension = EXPORT_TYPES[export_format]
    body = codebook_spec_export(
        codebook_version_to_spec(version=version), export_format, counts, counts_title
    )
    response = HttpResponse(body, content_type=content_type)
    name = f"{version.codebook.name}-{version.label}".replace(" ", "-")
    safe = "".join(ch for ch in name if ch.isalnum() or ch in "-_.") or "codebook"
    response["Content-Disposition"] = f'attachment; filename="{safe}.{extension}"'
    return response


# A study's codebook


def _study_or_404(request: HttpRequest, slug: str) -> tuple[Study, set[str]]:
    found = study_get_visible_to(slug=slug, user=request.user)
    if found is None:
        raise Http404("No such study.")
    return found


def _study_nav(study: Study, roles: set[str]) -> dict:
    return {
        "study": study,
        "oversees": study_can_see_agreement(roles=roles),
        "manages": MANAGER in roles,
        "is_annotator": study_can_label(roles=roles),
    }


AGREEMENT_COLUMNS = ("n_items", "percent_agreement", "krippendorff_alpha")


@login_required
@require_http_methods(["GET", "POST"])
def study_codebook(request: HttpRequest, slug: str) -> HttpResponse:
    """A study's codebook over time: its version, the later versions it may move to, the moves
    so far, what waits to be re-checked, and agreement per version."""
    study, roles = _study_or_404(request, slug)
    if not study_can_change_codebook(study=study, user=request.user):
        raise PermissionDenied("This page is for the study's managers.")
    if request.method == "POST":
        target = CodebookVersion.objects.filter(
            pk=_int(request.POST.get("version")), codebook=study.codebook_version.codebook
        ).first()
        try:
            if target is None:
                raise ApplicationError("Choose a version of the study's codebook.")
            change = study_codebook_migrate(study=study, to_version=target, by=request.user)
        except ApplicationError as error:
            messages.error(request, error.message)
        else:
            counts = change.counts
            messages.success(
                request,
                f"{study.name} moved to version {target.label}: "
                f"{counts.get('annotations_migrated', 0)} labels and "
                f"{counts.get('resolutions_migrated', 0)} gold labels followed, "
                f"{counts.get('annotations_flagged', 0)} labels and "
                f"{counts.get('resolutions_flagged', 0)} gold labels to re-check.",
            )
            return redirect("study_codebook", slug=study.slug)
        study, roles = _study_or_404(request, slug)
    current = study.codebook_version
    later = [
        version
        for version in current.codebook.versions.filter(
            status=CodebookVersion.Status.PUBLISHED
        ).order_by("created_at", "id")
        if version.pk != current.pk and version_chain(from_version=current, to_version=version)
    ]
    reports = agreement_by_version(study=study)
    agreement_rows = [
        {
            "version": label,
            # People read dimension names; the headline κ is the one every page leads with.
            "dimension": figures.get("name", key),
            **{column: figures.get(column) for column in AGREEMENT_COLUMNS},
            "cohen_kappa": (figures.get("headline") or {}).get("value"),
        }
        for label, report in reports.items()
        for key, figures in report["dimensions"].items()
    ]
    context = {
        **_study_nav(study, roles),
        "current": current,
        "later": later,
        "draft": codebook_draft_for_study_version(version=current),
        "history": study_codebook_history(study=study),
        "label_versions": study_label_versions(study=study),
        "recheck": recheck_summary(study=study),
        "agreement_rows": agreement_rows,
        "can_edit": codebook_can_edit(codebook=current.codebook, user=request.user),
    }
    return render(request, "web/study_codebook.html", context)


@login_required
@require_http_methods(["GET", "POST"])
def study_proposals_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Open coding: the categories the annotators proposed, per dimension, for the managers."""
    study, roles = _study_or_404(request, slug)
    if not study_can_change_codebook(study=study, user=request.user):
        raise PermissionDenied("This page is for the study's managers.")
    status = 200
    if request.method == "POST":
        post = request.POST
        try:
            if post.get("action") == "map":
                decision = proposal_map(
                    study=study,
                    dimension_key=post.get("dimension", ""),
                    text=post.get("text", ""),
                    category_key=post.get("category", ""),
                    by=request.user,
                )
            elif post.get("action") == "create":
                decision = proposal_create_category(
                    study=study,
                    dimension_key=post.get("dimension", ""),
                    text=post.get("text", ""),
                    key=post.get("key", ""),
                    name=post.get("name", ""),
                    parent_key=post.get("parent") or None,
                    by=request.user,
                )
            else:
                raise ApplicationError("Unknown action; reload the page.")
        except ApplicationError as error:
            messages.error(request, error.message)
            status = 400
        else:
            named = decision.category.name if decision.category else decision.category_key
            messages.success(
                request,
                f"“{decision.text}” {decision.get_kind_display().lower()}: "
                f"{named} ({decision.category_key}, version {decision.version.label}).",
            )
            return redirect("study_proposals", slug=study.slug)
    dimensions = []
    categories: dict[str, list[Category]] = {}
    for category in (
        Category.objects.filter(dimension__version=study.codebook_version)
        .select_related("dimension")
        .order_by("position")
    ):
        categories.setdefault(category.dimension.key, []).append(category)
    for key, name, groups in study_proposals(study=study):
        dimensions.append(
            {"key": key, "name": name, "groups": groups, "categories": categories.get(key, [])}
        )
    context = {
        **_study_nav(study, roles),
        "dimensions": dimensions,
        "draft": codebook_draft_for_study_version(version=study.codebook_version),
    }
    return render(request, "web/study_proposals.html", context, status=status)


@login_required
@require_safe
def study_recheck(request: HttpRequest, slug: str) -> HttpResponse:
    """What a codebook change left to re-check: an annotator's own labels, and for the
    adjudicators and managers the gold labels."""
    study, roles = _study_or_404(request, slug)
    is_annotator = study_can_label(roles=roles)
    oversees = study_can_see_agreement(roles=roles)
    if not (is_annotator or oversees):
        raise Http404("No such page.")
    context = {
        **_study_nav(study, roles),
        "annotations": recheck_list_for_annotator(study=study, user=request.user)
        if is_annotator
        else [],
        "resolutions": resolutions_to_recheck(study=study) if oversees else [],
    }
    return render(request, "web/study_recheck.html", context)
