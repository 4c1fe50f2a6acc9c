"""The paper's tables over the API: the list of a study's tables, and one table as JSON (columns
and rows) or as a file (CSV, Markdown, LaTeX, its chart as SVG), under the report's filters.
Thin: the tables are built in exports.tables, the files in exports.report_files.

The actions hang on StudyViewSet (`StudyReportActions`), so that the study is looked up and its
roles checked as for every other route of a study: a study the user may not see is a 404, a role
other than manager or adjudicator a 403 (the same rule as the report page).
"""

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response

from api.renderers import JSONRenderer
from api.resolutions import ERRORS, OVERSEERS
from common.tables import table_json
from exports.report_files import FORMATS, table_file
from exports.tables import LEVELS, paper_table_spec, paper_table_specs, report_filters_parse

TABLE_ID = OpenApiParameter("table_id", OpenApiTypes.STR, OpenApiParameter.PATH)


class JsonForErrors(DefaultContentNegotiation):
    """`?format=` names the file a table comes as (csv, md, tex, svg, json), not a DRF renderer:
    the view returns the files itself, and everything else, errors included, is JSON."""

    def select_renderer(self, request, renderers, format_suffix=None):
        renderer = JSONRenderer()
        return renderer, renderer.media_type


# Shapes


class TableQuerySerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=["json", *FORMATS], default="json")
    round = serializers.CharField(required=False, allow_blank=True, max_length=100)
    repository = serializers.CharField(required=False, allow_blank=True, max_length=201)
    level = serializers.ChoiceField(
        choices=list(LEVELS),
        required=False,
        allow_blank=True,
        help_text="leaf: categories as chosen (default); parent: rolled up to the top level",
    )


class TableSummarySerializer(serializers.Serializer):
    id = serializers.CharField(help_text="distribution-<dimension>, crosstab-<a>-<b>, ...")
    title = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=["distribution", "crosstab", "agreement", "funnel", "machines", "delegation"]
    )


class TableListSerializer(serializers.Serializer):
    study = serializers.CharField()
    formats = serializers.ListField(child=serializers.CharField())
    tables = TableSummarySerializer(many=True)


class TableColumnSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.ChoiceField(
        choices=["text", "count", "number", "percent", "count_percent"],
        help_text='count_percent cells are {"count", "percent"}; percent is 0..100',
    )
    align = serializers.ChoiceField(choices=["left", "right", "center"])


class TableSerializer(serializers.Serializer):
    """A table of common.tables.table_json: rows are objects keyed by column key."""

    key = serializers.CharField()
    title = serializers.CharField()
    caption = serializers.CharField(allow_blank=True)
    notes = serializers.ListField(child=serializers.CharField())
    columns = TableColumnSerializer(many=True)
    rows = serializers.ListField(child=serializers.DictField())
    footer = serializers.ListField(child=serializers.DictField(), help_text="totals")
    filters = serializers.DictField(child=serializers.CharField())


class StudyReportActions:
    """The report routes of a study, mixed into StudyViewSet."""

    @extend_schema(
        operation_id="studies_tables_list",
        responses={200: TableListSerializer, **ERRORS},
        description="The paper's tables of the study: ids and titles. Managers and adjudicators.",
    )
    @action(detail=True, methods=["get"], url_path="tables", permission_classes=OVERSEERS)
    def tables(self, request, slug=None):
        study = self.get_object()
        specs = paper_table_specs(study=study)
        return Response(
            {
                "study": study.slug,
                "formats": ["json", *FORMATS],
                "tables": [
                    {"id": spec.key, "title": spec.title, "kind": spec.kind} for spec in specs
                ],
            }
        )

    @extend_schema(
        operation_id="studies_tables_retrieve",
        parameters=[TABLE_ID, TableQuerySerializer],
        responses={
            (200, "application/json"): TableSerializer,
            (200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="format=csv"),
            (200, "text/markdown"): OpenApiResponse(OpenApiTypes.STR, description="format=md"),
            (200, "application/x-tex"): OpenApiResponse(OpenApiTypes.STR, description="format=tex"),
            (200, "image/svg+xml"): OpenApiResponse(OpenApiTypes.STR, description="format=svg"),
            **ERRORS,
        },
        description=(
            "One table of the study's report under the filters (round, repository, level), as "
            "JSON or as a file to download (csv, md, tex; svg: its chart). An unknown round, "
            "repository, level or format is a 400 naming it; an unknown table a 404. "
            "Managers and adjudicators."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"tables/(?P<table_id>[^/]+)",
        permission_classes=OVERSEERS,
        content_negotiation_class=JsonForErrors,
    )
    def table(self, request, slug=None, table_id=None):
        study = self.get_object()
        query = TableQuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        params = query.validated_data
        spec = paper_table_spec(study=study, table_key=table_id)
        if spec is None:
            raise NotFound(f"This study's report has no table {table_id!r}.")
        filters = report_filters_parse(
            study=study,
            round_name=params.get("round"),
            repository=params.get("repository"),
            level=params.get("level"),
        )
        if params["format"] == "json":
            return Response(table_json(spec.build(filters)) | {"filters": filters.query()})
        report_file = table_file(
            study=study, spec=spec, filters=filters, file_format=params["format"]
        )
        return HttpResponse(report_file.content, headers=report_file.headers)
