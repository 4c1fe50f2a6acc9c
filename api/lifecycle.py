"""A study's life over the API: closing and reopening it, its activity log. Thin: the rules are
in labeling.services.lifecycle, the reads in labeling.selectors.

The actions hang on StudyViewSet (`StudyLifeActions`), so that a study the user may not see is a
404 and a role that does not allow the action a 403, as on every route of a study.
"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from api.resolutions import ERRORS
from api.serializers import StudyDetailSerializer
from api.setup import MANAGERS, OVERSEERS
from labeling.agreement_report import study_round_statuses
from labeling.models import Round
from labeling.pilot_gate import study_gate_states
from labeling.selectors import study_event_data, study_event_list
from labeling.services.lifecycle import MAX_REASON, study_close, study_reopen
from labeling.services.pilot_gate import round_gate_open, round_targets_set


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=MAX_REASON, help_text="why; kept in the log")


class StudyEventSerializer(serializers.Serializer):
    at = serializers.DateTimeField()
    actor = serializers.CharField(allow_null=True, help_text="null: the operator, by a command")
    action = serializers.CharField()
    what = serializers.CharField(help_text="the action in words")
    reason = serializers.CharField(allow_blank=True)
    details = serializers.DictField()


class StudyLifeActions:
    """Close, reopen and the activity log, mixed into StudyViewSet."""

    def _status_change(self, request, change):
        study = self.get_object()
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        change(study=study, user=request.user, reason=body.validated_data["reason"])
        study = self.get_queryset().get(pk=study.pk)
        return Response(StudyDetailSerializer(study).data)

    @extend_schema(
        request=ReasonSerializer,
        responses={200: StudyDetailSerializer, **ERRORS},
        description=(
            "Close the study, saying why: no more labeling, resolution, codebook moves or "
            "assignment changes (each is refused with a 409, code `study_closed`); agreement, "
            "exports and tables stay. Recorded in the activity log. Managers of the study."
        ),
    )
    @action(detail=True, methods=["post"], permission_classes=MANAGERS)
    def close(self, request, slug=None):
        return self._status_change(request, study_close)

    @extend_schema(
        request=ReasonSerializer,
        responses={200: StudyDetailSerializer, **ERRORS},
        description="Open a closed study again, saying why. Managers of the study.",
    )
    @action(detail=True, methods=["post"], permission_classes=MANAGERS)
    def reopen(self, request, slug=None):
        return self._status_change(request, study_reopen)

    @extend_schema(
        responses={200: StudyEventSerializer(many=True), 403: ERRORS[403], 404: ERRORS[404]},
        description=(
            "The study's activity log, newest first, paginated: who closed or reopened it, "
            "changed its members, moved its codebook or opened a round, when and why. "
            "Managers and adjudicators of the study."
        ),
    )
    @action(detail=True, methods=["get"], permission_classes=OVERSEERS)
    def activity(self, request, slug=None):
        study = self.get_object()
        page = self.paginate_queryset(study_event_list(study=study))
        rows = [study_event_data(event) for event in page]
        return self.get_paginated_response(StudyEventSerializer(rows, many=True).data)


class GateSerializer(serializers.Serializer):
    is_open = serializers.BooleanField()
    wording = serializers.CharField(help_text="the gate's state in words, with what holds it")
    held_back_by = serializers.ListField(
        child=serializers.CharField(), help_text="names of the pilot rounds not passed yet"
    )
    opened_at = serializers.DateTimeField(allow_null=True, source="round.gate_opened_at")
    opened_by = serializers.CharField(allow_null=True)
    opened_reason = serializers.CharField(allow_blank=True, source="round.gate_opened_reason")


class RoundStateSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    position = serializers.IntegerField()
    target_kappa = serializers.FloatField(allow_null=True)
    dimension_targets = serializers.DictField(child=serializers.FloatField())
    verdict = serializers.CharField(
        allow_null=True, help_text="passed, failed, not judged, no target"
    )
    verdict_wording = serializers.CharField(allow_null=True)
    gate = GateSerializer(allow_null=True, help_text="null: no pilot with a target before it")


class TargetsSerializer(serializers.Serializer):
    target_kappa = serializers.FloatField(
        allow_null=True, min_value=-1, max_value=1, help_text="every required dimension's"
    )
    dimension_targets = serializers.DictField(
        child=serializers.FloatField(allow_null=True, min_value=-1, max_value=1),
        required=False,
        help_text="per required dimension key, a target of its own",
    )


ROUND_ID = OpenApiParameter("round_id", OpenApiTypes.INT, OpenApiParameter.PATH)


def _round_rows(study) -> list[dict]:
    rounds = list(study.rounds.order_by("position").select_related("gate_opened_by"))
    statuses = {status.round.pk: status for status in study_round_statuses(study=study)}
    gates = {gate.round.pk: gate for gate in study_gate_states(study=study, rounds=rounds)}
    rows = []
    for round_ in rounds:
        status, gate = statuses.get(round_.pk), gates.get(round_.pk)
        rows.append(
            {
                "id": round_.pk,
                "name": round_.name,
                "kind": round_.kind,
                "position": round_.position,
                "target_kappa": round_.target_kappa,
                "dimension_targets": round_.dimension_targets or {},
                "verdict": status.verdict if status else None,
                "verdict_wording": status.wording if status else None,
                "gate": None
                if gate is None
                else {
                    "is_open": gate.is_open,
                    "wording": gate.wording,
                    "held_back_by": [s.round.name for s in gate.held_back_by],
                    "round": round_,
                    "opened_by": round_.gate_opened_by.get_username()
                    if round_.gate_opened_by
                    else None,
                },
            }
        )
    return rows


class StudyRoundActions:
    """The rounds' targets and the pilot gate, mixed into StudyViewSet."""

    def _round(self, study, round_id) -> Round:
        round_ = Round.objects.filter(study=study, pk=int(round_id)).first()
        if round_ is None:
            raise NotFound("No such round in this study.")
        return round_

    def _round_row(self, study, round_id) -> dict:
        return next(row for row in _round_rows(study) if row["id"] == int(round_id))

    @extend_schema(
        responses={200: RoundStateSerializer(many=True), 403: ERRORS[403], 404: ERRORS[404]},
        description=(
            "The study's rounds in order, each with its targets, its agreement verdict (on "
            "the headline κ of each required dimension) and, for a main round after pilot "
            "rounds with targets, the gate: open or not, and which pilots hold it back. "
            "Managers and adjudicators of the study."
        ),
    )
    # A study has a few rounds: one list, not pages (the schema says so too).
    @action(detail=True, methods=["get"], permission_classes=OVERSEERS, pagination_class=None)
    def rounds(self, request, slug=None):
        study = self.get_object()
        return Response(RoundStateSerializer(_round_rows(study), many=True).data)

    @extend_schema(
        parameters=[ROUND_ID],
        request=TargetsSerializer,
        responses={200: RoundStateSerializer, **ERRORS},
        description=(
            "Set a round's target κ for every required dimension and, per dimension key, "
            "targets of their own. Logged. Managers of the study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"rounds/(?P<round_id>[0-9]+)/targets",
        url_name="round-targets",
        permission_classes=MANAGERS,
    )
    def round_targets(self, request, slug=None, round_id=None):
        study = self.get_object()
        round_ = self._round(study, round_id)
        body = TargetsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        round_targets_set(
            round=round_,
            user=request.user,
            target_kappa=body.validated_data["target_kappa"],
            dimension_targets=body.validated_data.get("dimension_targets"),
        )
        return Response(RoundStateSerializer(self._round_row(study, round_id)).data)

    @extend_schema(
        parameters=[ROUND_ID],
        request=ReasonSerializer,
        responses={200: RoundStateSerializer, **ERRORS},
        description=(
            "Open a main round that waits for its pilots before they pass, saying why (kept "
            "on the round and in the activity log). Managers of the study."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"rounds/(?P<round_id>[0-9]+)/open",
        url_name="round-open",
        permission_classes=MANAGERS,
    )
    def round_open(self, request, slug=None, round_id=None):
        study = self.get_object()
        round_ = self._round(study, round_id)
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        round_gate_open(round=round_, user=request.user, reason=body.validated_data["reason"])
        return Response(RoundStateSerializer(self._round_row(study, round_id)).data)
