"""The codebook editor and a study's codebook over the API. Thin: the rules are in
taxonomy.drafts (editing, publishing), taxonomy.diff, labeling.services.codebook_migration,
labeling.proposals and labeling.rereview; who may do what in labeling.access.

Editor actions (`CodebookVersionEditorActions`) look a version up as CodebookVersionViewSet
does, then `codebook_can_edit` decides (403 otherwise). Study actions (`StudyCodebookActions`)
look a study up and check roles as StudyViewSet does. Both are routed by `urlpatterns` here,
beside the router's routes of the same prefixes. A refused change
(a published version, a bad mapping, a cycle) is a 400 in the one error shape and changes
nothing.
"""

from django.http import HttpResponse
from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.exception_handler import ErrorSerializer
from api.permissions import IsStudyAdjudicator, IsStudyManager, IsStudyMember, StudyLookup
from api.resolutions import ERRORS
from api.serializers import (
    CodebookVersionDetailSerializer,
    CodebookVersionSerializer,
    StudySerializer,
)
from api.views import CodebookVersionViewSet
from common.exceptions import ApplicationError
from labeling.access import (
    codebook_can_edit,
    codebook_version_get_visible_to,
    study_can_label,
    study_can_see_agreement,
    study_get_visible_to,
    study_roles,
)
from labeling.codebook_history import (
    agreement_by_version,
    study_category_counts,
    study_category_counts_title,
)
from labeling.proposals import proposal_create_category, proposal_map, study_proposals
from labeling.rereview import recheck_list_for_annotator, resolutions_to_recheck
from labeling.services.codebook_migration import study_codebook_migrate
from taxonomy.codebook_file import EXPORT_FORMATS, codebook_spec_export, codebook_spec_to_dict
from taxonomy.diff import codebook_diff
from taxonomy.drafts import (
    MappingEntry,
    codebook_draft_create,
    codebook_draft_publish,
    draft_category_add,
    draft_category_merge,
    draft_category_move,
    draft_category_remove,
    draft_category_reorder,
    draft_category_split,
    draft_category_update,
    draft_dimension_update,
    draft_mapping_declare,
)
from taxonomy.models import Category, CategoryMapping, CodebookVersion, Dimension
from taxonomy.selectors import codebook_version_to_spec

MAPPING_KINDS = [
    CategoryMapping.Kind.MERGE.value,
    CategoryMapping.Kind.SPLIT.value,
    CategoryMapping.Kind.REMOVE.value,
]


class DraftCreateSerializer(serializers.Serializer):
    label = serializers.CharField(max_length=50)
    notes = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class DimensionUpdateSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    name = serializers.CharField(required=False, max_length=200)
    description = serializers.CharField(required=False, allow_blank=True)
    multi_label = serializers.BooleanField(required=False)
    required = serializers.BooleanField(required=False)
    ordinal = serializers.BooleanField(required=False)


class CategoryAddSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    key = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200)
    parent = serializers.CharField(required=False, allow_null=True, default=None)
    definition = serializers.CharField(required=False, allow_blank=True, default="")
    include = serializers.CharField(required=False, allow_blank=True, default="")
    exclude = serializers.CharField(required=False, allow_blank=True, default="")
    examples = serializers.ListField(
        child=serializers.CharField(max_length=500), required=False, default=list
    )


class CategoryChangeSerializer(serializers.Serializer):
    """Change one category: any of its fields; `parent` (null: the top level) moves it;
    `direction` moves it up or down among its siblings."""

    dimension = serializers.SlugField()
    category = serializers.CharField(max_length=100)
    key = serializers.CharField(required=False, max_length=100)
    name = serializers.CharField(required=False, max_length=200)
    definition = serializers.CharField(required=False, allow_blank=True)
    include = serializers.CharField(required=False, allow_blank=True)
    exclude = serializers.CharField(required=False, allow_blank=True)
    examples = serializers.ListField(child=serializers.CharField(max_length=500), required=False)
    deprecated = serializers.BooleanField(required=False)
    parent = serializers.CharField(required=False, allow_null=True)
    direction = serializers.ChoiceField(choices=["up", "down"], required=False)


class CategoryRefSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    category = serializers.CharField(max_length=100)


class MergeSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    sources = serializers.ListField(child=serializers.CharField(max_length=100), min_length=1)
    target = serializers.CharField(max_length=100)


class PartSerializer(serializers.Serializer):
    key = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200, required=False, default="")


class SplitSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    category = serializers.CharField(max_length=100)
    parts = PartSerializer(many=True)
    keep_source = serializers.BooleanField(required=False, default=False)


# "from" is a Python keyword, so the class is built with its fields by name.
MappingEntrySerializer = type(
    "MappingEntrySerializer",
    (serializers.Serializer,),
    {
        "from": serializers.CharField(max_length=100),
        "kind": serializers.ChoiceField(choices=MAPPING_KINDS),
        "to": serializers.ListField(
            child=serializers.CharField(max_length=100), required=False, default=list
        ),
    },
)


class MappingSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    mapping = MappingEntrySerializer(many=True, allow_empty=False)


class MappingRowSerializer(serializers.ModelSerializer):
    dimension = serializers.CharField(source="from_category.dimension.key")
    to = serializers.CharField(source="to_category.key", allow_null=True)

    class Meta:
        model = CategoryMapping
        fields = ["dimension", "kind", "to"]

    def to_representation(self, instance):
        data = super().to_representation(instance)
        data["from"] = instance.from_category.key
        return data


FROM = OpenApiParameter(
    "from", OpenApiTypes.INT, description="the earlier version (default: the one it is based on)"
)
# Not "format": DRF reads that one for its own content negotiation.
FORMAT = OpenApiParameter("as", OpenApiTypes.STR, enum=list(EXPORT_FORMATS))
STUDY = OpenApiParameter("study", OpenApiTypes.STR, description="Markdown: this study's counts")
EXPORTED = "the codebook file (as=json or yaml) or its appendix (as=markdown)"


def _dimension(version: CodebookVersion, key: str) -> Dimension:
    dimension = (
        Dimension.objects.select_related("version__codebook")
        .filter(version=version, key=key)
        .first()
    )
    if dimension is None:
        raise ApplicationError(
            f"{key!r} is not a dimension of version {version.label}.",
            {"dimension": [f"unknown dimension {key}"]},
        )
    return dimension


def _category(version: CodebookVersion, dimension_key: str, key: str) -> Category:
    dimension = _dimension(version, dimension_key)
    category = (
        Category.objects.select_related("dimension__version__codebook", "derived_from")
        .filter(dimension=dimension, key=key)
        .first()
    )
    if category is None:
        raise ApplicationError(
            f"{key!r} is not a category of {dimension.name} in version {version.label}.",
            {"category": [f"unknown category {key}"]},
        )
    return category


def _valid(serializer_class, request) -> dict:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


class CodebookVersionEditorActions:
    """Routes of the codebook editor on /api/codebook-versions/{id}/."""

    def _editable(self, request) -> CodebookVersion:
        version = self.get_object()
        if not codebook_can_edit(codebook=version.codebook, user=request.user):
            raise PermissionDenied(
                "Editing a codebook is for superusers and the managers of a study that uses it."
            )
        return version

    def _detail(self, version: CodebookVersion, http_status: int = 200) -> Response:
        version = self.get_queryset().get(pk=version.pk)
        return Response(CodebookVersionDetailSerializer(version).data, status=http_status)

    @extend_schema(
        request=DraftCreateSerializer,
        responses={201: CodebookVersionDetailSerializer, **ERRORS},
        description="Start a draft (new rows) from a published version, under a new label.",
    )
    @action(detail=True, methods=["post"])
    def drafts(self, request, pk=None):
        version = self._editable(request)
        data = _valid(DraftCreateSerializer, request)
        draft = codebook_draft_create(version=version, label=data["label"], notes=data["notes"])
        return self._detail(draft, status.HTTP_201_CREATED)

    @extend_schema(
        request=None,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description=(
            "Publish a draft: every category of the version it is based on must be kept, "
            "merged, split or removed; the version then never changes."
        ),
    )
    @action(detail=True, methods=["post"])
    def publish(self, request, pk=None):
        return self._detail(codebook_draft_publish(version=self._editable(request)))

    @extend_schema(
        request=DimensionUpdateSerializer,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description="A dimension's settings in a draft: single or multi-label, required, ordinal.",
    )
    @action(detail=True, methods=["post"], url_path="dimension")
    def dimension_update(self, request, pk=None):
        version = self._editable(request)
        data = _valid(DimensionUpdateSerializer, request)
        draft_dimension_update(
            dimension=_dimension(version, data.pop("dimension")),
            **data,
        )
        return self._detail(version)

    @extend_schema(
        request=CategoryAddSerializer,
        responses={201: CodebookVersionDetailSerializer, **ERRORS},
        description="Add a category to a dimension of a draft.",
    )
    @action(detail=True, methods=["post"], url_path="categories")
    def category_add(self, request, pk=None):
        version = self._editable(request)
        data = _valid(CategoryAddSerializer, request)
        draft_category_add(
            dimension=_dimension(version, data["dimension"]),
            key=data["key"],
            name=data["name"],
            parent_key=data["parent"],
            definition=data["definition"],
            include=data["include"],
            exclude=data["exclude"],
            examples=data["examples"],
        )
        return self._detail(version, status.HTTP_201_CREATED)

    @extend_schema(
        request=CategoryChangeSerializer,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description=(
            "Change a category of a draft: rename it (key, name), edit its definition, notes and "
            "examples, deprecate it, move it (`parent`) or reorder it (`direction`)."
        ),
    )
    @action(detail=True, methods=["post"], url_path="category")
    def category_change(self, request, pk=None):
        version = self._editable(request)
        data = _valid(CategoryChangeSerializer, request)
        category = _category(version, data.pop("dimension"), data.pop("category"))
        moves = "parent" in data
        parent = data.pop("parent", None)
        direction = data.pop("direction", None)
        # One transaction per service call; a change and a move are two calls that each
        # refuse on their own, so refuse the move's target before changing anything.
        if moves and parent is not None:
            _category(version, category.dimension.key, parent)
        if data:
            category = draft_category_update(category=category, **data)
        if moves:
            category = draft_category_move(category=category, parent_key=parent)
        if direction:
            draft_category_reorder(category=category, direction=direction)
        return self._detail(version)

    @extend_schema(
        request=CategoryRefSerializer,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description=(
            "Remove a category from a draft (a category of the version it is based on is "
            "recorded as removed; its labels will be flagged for re-checking)."
        ),
    )
    @action(detail=True, methods=["post"], url_path="remove")
    def category_remove(self, request, pk=None):
        version = self._editable(request)
        data = _valid(CategoryRefSerializer, request)
        draft_category_remove(category=_category(version, data["dimension"], data["category"]))
        return self._detail(version)

    @extend_schema(
        request=MergeSerializer,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description="Merge categories of a draft into another; their labels will follow.",
    )
    @action(detail=True, methods=["post"])
    def merge(self, request, pk=None):
        version = self._editable(request)
        data = _valid(MergeSerializer, request)
        draft_category_merge(
            dimension=_dimension(version, data["dimension"]),
            source_keys=data["sources"],
            target_key=data["target"],
        )
        return self._detail(version)

    @extend_schema(
        request=SplitSerializer,
        responses={200: CodebookVersionDetailSerializer, **ERRORS},
        description="Split a category of a draft into parts (made when new).",
    )
    @action(detail=True, methods=["post"])
    def split(self, request, pk=None):
        version = self._editable(request)
        data = _valid(SplitSerializer, request)
        draft_category_split(
            dimension=_dimension(version, data["dimension"]),
            source_key=data["category"],
            parts=[(part["key"], part["name"]) for part in data["parts"]],
            keep_source=data["keep_source"],
        )
        return self._detail(version)

    @extend_schema(
        request=MappingSerializer,
        responses={200: MappingRowSerializer(many=True), **ERRORS},
        description=(
            "Declare merges, splits and removals of one dimension, all or nothing: `from` is a "
            "category of the version the draft is based on, `to` categories of the draft. A "
            "target not in the draft, a category mapped twice, a cycle: 400, nothing changed."
        ),
    )
    @action(detail=True, methods=["post", "get"])
    def mapping(self, request, pk=None):
        if request.method == "GET":
            version = self.get_object()
            rows = CategoryMapping.objects.filter(to_version=version).select_related(
                "from_category__dimension", "to_category"
            )
            # A list like every other: paginated (and documented so).
            page = self.paginate_queryset(rows.order_by("id"))
            return self.get_paginated_response(MappingRowSerializer(page, many=True).data)
        version = self._editable(request)
        data = _valid(MappingSerializer, request)
        created = draft_mapping_declare(
            dimension=_dimension(version, data["dimension"]),
            entries=[
                MappingEntry(from_key=entry["from"], kind=entry["kind"], to_keys=entry["to"])
                for entry in data["mapping"]
            ],
        )
        return Response(MappingRowSerializer(created, many=True).data)

    @extend_schema(
        parameters=[FROM],
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "What changed from an earlier version (`from`, default the version this one is "
            "based on) to this one, per dimension: added, removed, renamed, moved, merged, "
            "split, changed texts and settings."
        ),
    )
    @action(detail=True, methods=["get"])
    def diff(self, request, pk=None):
        version = self.get_object()
        from_id = request.query_params.get("from") or version.based_on_id
        try:
            earlier = codebook_version_get_visible_to(version_id=int(from_id), user=request.user)
        except (TypeError, ValueError):
            earlier = None
        if earlier is None:
            raise ApplicationError(
                "Name the earlier version: ?from=ID (this version is based on none).",
                {"from": ["a version id"]},
            )
        return Response(codebook_diff(from_version=earlier, to_version=version))

    @extend_schema(
        parameters=[FORMAT, STUDY],
        responses={
            (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT, description=EXPORTED),
            (200, "application/yaml"): OpenApiResponse(OpenApiTypes.STR, description=EXPORTED),
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description=EXPORTED),
            400: ERRORS[400],
            403: OpenApiResponse(
                ErrorSerializer, description="?study= counts are for managers and adjudicators"
            ),
            404: OpenApiResponse(ErrorSerializer, description="no such version or study for you"),
        },
        description=(
            "The version (?as=json|yaml|markdown) as a codebook file (json: the object; yaml) "
            "or as Markdown for a paper's appendix (with ?study=SLUG, that study's label and "
            "gold counts: for its managers of every item, for its adjudicators of the items in "
            "resolution or resolved, whose labels are all in)."
        ),
    )
    @action(detail=True, methods=["get"])
    def export(self, request, pk=None):
        version = self.get_object()
        export_format = request.query_params.get("as", "json")
        if export_format not in EXPORT_FORMATS:
            raise ApplicationError(
                f"as is one of {', '.join(EXPORT_FORMATS)}.", {"as": ["unknown"]}
            )
        spec = codebook_version_to_spec(version=version)
        if export_format == "json":
            return Response(codebook_spec_to_dict(spec))
        counts, title = None, ""
        slug = request.query_params.get("study")
        if slug and export_format == "markdown":
            found = study_get_visible_to(slug=slug, user=request.user)
            if found is None:
                raise NotFound(f"No study {slug!r}.")
            study, roles = found
            if not study_can_see_agreement(roles=roles):
                raise PermissionDenied("The counts are for the study's managers and adjudicators.")
            counts = study_category_counts(study=study, roles=roles)
            title = study_category_counts_title(study=study, roles=roles)
        content_type = "application/yaml" if export_format == "yaml" else "text/markdown"
        return HttpResponse(
            codebook_spec_export(spec, export_format, counts, title),
            content_type=f"{content_type}; charset=utf-8",
        )


class MigrateSerializer(serializers.Serializer):
    version = serializers.IntegerField()


class ProposalDecisionSerializer(serializers.Serializer):
    dimension = serializers.SlugField()
    text = serializers.CharField(max_length=400)
    action = serializers.ChoiceField(choices=["map", "create"])
    category = serializers.CharField(required=False, max_length=100)
    key = serializers.CharField(required=False, max_length=100)
    name = serializers.CharField(required=False, max_length=200)
    parent = serializers.CharField(required=False, allow_null=True, default=None)


MANAGERS = [IsAuthenticated, IsStudyMember & IsStudyManager]
MEMBERS = [IsAuthenticated, IsStudyMember]
OVERSEERS = [IsAuthenticated, IsStudyMember & (IsStudyManager | IsStudyAdjudicator)]


def _decision_data(decision) -> dict:
    return {
        "dimension": decision.dimension_key,
        "text": decision.text,
        "kind": decision.kind,
        "category": decision.category_key,
        "version": {"id": decision.version_id, "label": decision.version.label},
        "decided_by": decision.decided_by.get_username() if decision.decided_by else None,
        "decided_at": decision.decided_at.isoformat(),
    }


class StudyCodebookActions:
    """Routes of a study's codebook on /api/studies/{slug}/."""

    @extend_schema(
        request=MigrateSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "Move the study to a later published version of its codebook: renamed and merged "
            "categories carry their labels along (revisions), split and removed ones flag "
            "their labels for re-checking. Managers of the study."
        ),
    )
    @action(detail=True, methods=["post"], url_path="codebook-migrate", permission_classes=MANAGERS)
    def codebook_migrate(self, request, slug=None):
        study = self.get_object()
        data = _valid(MigrateSerializer, request)
        version = codebook_version_get_visible_to(version_id=data["version"], user=request.user)
        if version is None:
            raise ApplicationError("No such codebook version.", {"version": ["unknown"]})
        change = study_codebook_migrate(study=study, to_version=version, by=request.user)
        return Response(
            {
                "study": study.slug,
                "from": CodebookVersionSerializer(change.from_version).data,
                "to": CodebookVersionSerializer(change.to_version).data,
                "counts": change.counts,
            }
        )

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "The categories the annotators proposed, per dimension, grouped by folded text, "
            "with counts, example issues and the decision taken. Managers of the study."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=MANAGERS)
    def proposals(self, request, slug=None):
        study = self.get_object()
        return Response(
            {
                "study": study.slug,
                "dimensions": [
                    {
                        "key": key,
                        "name": name,
                        "proposals": [
                            {
                                "text": group.text,
                                "spellings": group.spellings,
                                "count": group.count,
                                "annotators": group.annotators,
                                "examples": [
                                    {"item": e.item_id, "issue": e.reference, "url": e.url}
                                    for e in group.examples
                                ],
                                "decision": _decision_data(group.decision)
                                if group.decision
                                else None,
                            }
                            for group in groups
                        ],
                    }
                    for key, name, groups in study_proposals(study=study)
                ],
            }
        )

    @extend_schema(
        request=ProposalDecisionSerializer,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "Decide a proposal: `map` it to an existing `category`, or `create` it (`key`, "
            "`name`, `parent`) in the draft of the next version. Managers of the study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="proposals/decide",
        permission_classes=MANAGERS,
    )
    def proposals_decide(self, request, slug=None):
        study = self.get_object()
        data = _valid(ProposalDecisionSerializer, request)
        if data["action"] == "map":
            if not data.get("category"):
                raise ApplicationError("Name the category.", {"category": ["required"]})
            decision = proposal_map(
                study=study,
                dimension_key=data["dimension"],
                text=data["text"],
                category_key=data["category"],
                by=request.user,
            )
        else:
            if not data.get("key") or not data.get("name"):
                raise ApplicationError("Give the key and name.", {"key": ["required"]})
            decision = proposal_create_category(
                study=study,
                dimension_key=data["dimension"],
                text=data["text"],
                key=data["key"],
                name=data["name"],
                parent_key=data["parent"],
                by=request.user,
            )
        return Response(_decision_data(decision))

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "What a codebook change left to re-check: your own labels (annotators) and the "
            "study's gold labels (managers and adjudicators)."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=MEMBERS)
    def recheck(self, request, slug=None):
        study = self.get_object()
        roles = study_roles(study=study, user=request.user)
        labels = (
            recheck_list_for_annotator(study=study, user=request.user)
            if study_can_label(roles=roles)
            else []
        )
        gold = resolutions_to_recheck(study=study) if study_can_see_agreement(roles=roles) else []
        return Response(
            {
                "labels": [
                    {
                        "item": a.assignment.item_id,
                        "issue": str(a.assignment.item.issue),
                        "dimension": a.dimension.key,
                        "categories": sorted(c.key for c in a.categories.all()),
                        "note": a.review_note,
                        "since": a.needs_review_since.isoformat(),
                    }
                    for a in labels
                ],
                "gold": [
                    {
                        "item": r.item_id,
                        "issue": str(r.item.issue),
                        "dimension": r.dimension.key,
                        "categories": sorted(c.key for c in r.categories.all()),
                        "note": r.review_note,
                        "since": r.needs_review_since.isoformat(),
                    }
                    for r in gold
                ],
            }
        )

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
        description=(
            "The agreement report once per codebook version the labels were submitted under, "
            "by version label. Managers and adjudicators of the study."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="agreement-by-version",
        permission_classes=OVERSEERS,
    )
    def agreement_by_version(self, request, slug=None):
        study = self.get_object()
        return Response({"study": study.slug, "versions": agreement_by_version(study=study)})


class CodebookVersionEditorViewSet(CodebookVersionEditorActions, CodebookVersionViewSet):
    """The editor's routes, beside the read-only routes of CodebookVersionViewSet."""


class StudyCodebookViewSet(StudyLookup, StudyCodebookActions, viewsets.GenericViewSet):
    """A study's codebook routes, beside StudyViewSet's: the same lookup and roles."""

    serializer_class = StudySerializer
    permission_classes = [IsAuthenticated, IsStudyMember]


def _route(url: str, viewset, methods: dict[str, str], name: str):
    """A path to actions of a viewset, with each action's own options (permission classes), as
    a router would make it; kept out of the router so that /api/ keeps one entry per prefix."""
    options = getattr(viewset, next(iter(methods.values()))).kwargs
    return path(url, viewset.as_view(methods, **options), name=name)


VERSION = "codebook-versions/<int:pk>/"
STUDY = "studies/<slug:slug>/"
urlpatterns = [
    *(
        _route(f"{VERSION}{url}/", CodebookVersionEditorViewSet, methods, f"codebook-version-{url}")
        for url, methods in [
            ("drafts", {"post": "drafts"}),
            ("publish", {"post": "publish"}),
            ("dimension", {"post": "dimension_update"}),
            ("categories", {"post": "category_add"}),
            ("category", {"post": "category_change"}),
            ("remove", {"post": "category_remove"}),
            ("merge", {"post": "merge"}),
            ("split", {"post": "split"}),
            ("mapping", {"get": "mapping", "post": "mapping"}),
            ("diff", {"get": "diff"}),
            ("export", {"get": "export"}),
        ]
    ),
    *(
        _route(f"{STUDY}{url}/", StudyCodebookViewSet, methods, f"study-{url.replace('/', '-')}")
        for url, methods in [
            ("codebook-migrate", {"post": "codebook_migrate"}),
            ("proposals", {"get": "proposals"}),
            ("proposals/decide", {"post": "proposals_decide"}),
            ("recheck", {"get": "recheck"}),
            ("agreement-by-version", {"get": "agreement_by_version"}),
        ]
    ),
]
