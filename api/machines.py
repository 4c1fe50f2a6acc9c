"""Machine annotators over the API: the study's machine annotators and their runs (managers),
starting a run (managers), a run's full record with its prompt (managers), and the machines'
labels of one item under the blind rule of machines.selectors (a 404 for whoever may not see
them yet). What each call does is decided in machines.services and machines.selectors."""

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiTypes, extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from api.permissions import IsStudyManager, IsStudyMember, StudyLookup
from api.resolutions import ERRORS, _item_id
from api.serializers import StudySerializer
from exports.machine_labels import machine_labels_csv
from labeling.access import study_roles
from labeling.models import StudyItem
from machines.models import MachineAnnotator, MachineLabel, MachineRun
from machines.seats import study_machine_rater_set
from machines.selectors import (
    item_machine_labels,
    machine_labels_visible_to,
    study_machine_annotators,
    study_machine_runs,
)
from machines.services import (
    classical_run_request,
    machine_annotator_get_or_create,
    machine_run_request,
    machine_run_resume,
)

MANAGERS = [IsAuthenticated, IsStudyMember & IsStudyManager]
MEMBERS = [IsAuthenticated, IsStudyMember]
RUN_ID = OpenApiParameter("run_id", OpenApiTypes.INT, OpenApiParameter.PATH)
ITEM_ID = OpenApiParameter("item_id", OpenApiTypes.INT, OpenApiParameter.PATH)

RUN_FIELDS = [
    "id", "annotator", "status", "created_at", "started_at", "finished_at", "task_id",
    "items_total", "items_done", "items_skipped", "items_failed", "requests", "cache_hits",
    "tokens_in", "tokens_out", "prompt_hash", "endpoint_host", "parameters", "error",
    "item_errors", "codebook_version",
]  # fmt: skip


class ClassicalVectoriserSerializer(serializers.Serializer):
    kind = serializers.CharField()
    n_features = serializers.IntegerField(help_text="hashed features")
    ngram_range = serializers.ListField(child=serializers.IntegerField())
    lowercase = serializers.BooleanField()
    sublinear_tf = serializers.BooleanField()
    text = serializers.CharField(help_text="what of an item the features come from")
    text_char_budget = serializers.IntegerField()


class ClassicalClassifierSerializer(serializers.Serializer):
    kind = serializers.CharField()
    C = serializers.FloatField(help_text="inverse regularisation strength")
    solver = serializers.CharField()
    max_iter = serializers.IntegerField()
    tol = serializers.FloatField()


class ClassicalDimensionSerializer(serializers.Serializer):
    n_training_items = serializers.IntegerField(help_text="items with a gold label")
    n_folds = serializers.IntegerField(required=False)
    classes = serializers.ListField(child=serializers.CharField(), required=False)
    folds_with_one_class = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="folds whose training items all had one answer: labeled with it",
    )
    skipped = serializers.CharField(required=False, help_text="why: too little gold")


class MachineRunParametersSerializer(serializers.Serializer):
    """What decided the answers; empty until the run starts. A language model's run has the
    model, sampling and prompt settings; the scikit-learn annotator's run has the vectoriser,
    the classifier, the scikit-learn version, the folds and, per dimension, its training."""

    model = serializers.CharField(required=False)
    temperature = serializers.FloatField(required=False)
    seed = serializers.IntegerField(allow_null=True, required=False)
    samples = serializers.IntegerField(required=False)
    issue_char_budget = serializers.IntegerField(
        required=False, help_text="characters of an issue in a prompt"
    )
    max_in_flight = serializers.IntegerField(required=False)
    response_format = serializers.ChoiceField(
        choices=["json_schema", "none"],
        required=False,
        help_text="none: the endpoint refused json_schema; the schema was in the prompt only",
    )
    logprobs = serializers.BooleanField(
        required=False,
        help_text="true: log-probabilities were given and confidence comes from them",
    )
    models_answering = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="the model names the endpoint answered with (a dated version, for one)",
    )
    vectoriser = ClassicalVectoriserSerializer(
        required=False, help_text="scikit-learn: the text features"
    )
    classifier = ClassicalClassifierSerializer(
        required=False, help_text="scikit-learn: the linear model"
    )
    sklearn_version = serializers.CharField(required=False)
    n_folds = serializers.IntegerField(
        required=False, help_text="scikit-learn: cross-validation folds over the gold items"
    )
    min_gold_items = serializers.IntegerField(required=False)
    dimensions = serializers.DictField(
        child=ClassicalDimensionSerializer(),
        required=False,
        help_text="scikit-learn, per dimension key: n_training_items, n_folds and classes, or "
        "skipped (the reason: too little gold)",
    )


class ItemErrorSerializer(serializers.Serializer):
    item = serializers.IntegerField()
    error = serializers.CharField()


class MachineRunSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="annotator.name", read_only=True)
    parameters = MachineRunParametersSerializer(read_only=True, allow_null=True)
    item_errors = ItemErrorSerializer(
        many=True, read_only=True, help_text="the first items that failed, and why"
    )

    class Meta:
        model = MachineRun
        fields = RUN_FIELDS
        read_only_fields = fields


class MachineRunRecordSerializer(MachineRunSerializer):
    """A run with its prompt template: what a paper's method section reports."""

    class Meta(MachineRunSerializer.Meta):
        fields = [*RUN_FIELDS, "prompt_template", "settings_hash"]
        read_only_fields = fields


class MachineAnnotatorSerializer(serializers.ModelSerializer):
    seat_username = serializers.CharField(
        source="rater_user.username",
        default=None,
        help_text="the user holding the machine's seats once it counted as one of k",
    )

    class Meta:
        model = MachineAnnotator
        fields = [
            "id", "name", "kind", "base_url", "model", "api_key_env", "temperature", "seed",
            "samples", "counts_toward_k", "seat_username", "created_at",
        ]  # fmt: skip
        read_only_fields = fields


class MachineRaterSerializer(serializers.Serializer):
    annotator = serializers.CharField(
        allow_null=True,
        max_length=100,
        help_text="the name of the study's language-model annotator to count as one of k; "
        "null: none (every machine reported apart)",
    )


class SeatChangeSerializer(serializers.Serializer):
    machine_rater = serializers.CharField(allow_null=True)
    taken = serializers.IntegerField(help_text="seats the machine took, free ones and people's")
    withdrawn = serializers.IntegerField(help_text="of them, unopened assignments of people")
    filled = serializers.IntegerField(help_text="seats filled at once with its latest labels")
    given_back = serializers.IntegerField(help_text="unfilled seats of the machine before")


class MachinesSerializer(serializers.Serializer):
    annotators = MachineAnnotatorSerializer(many=True)
    runs = MachineRunSerializer(many=True, help_text="newest first")


class MachineRunStartSerializer(serializers.Serializer):
    """Types only; the rules (URL, env var name, bounds, one name for one set of settings) are
    machines.services', shared with `manage.py annotate_with_model`."""

    base_url = serializers.CharField(max_length=500)
    model = serializers.CharField(max_length=200)
    name = serializers.CharField(max_length=100, required=False, default="")
    api_key_env = serializers.CharField(
        max_length=100,
        required=False,
        default="",
        help_text="the NAME of the environment variable holding the key, never the key",
    )
    temperature = serializers.FloatField(required=False, default=0.0)
    seed = serializers.IntegerField(required=False, allow_null=True, default=None)
    samples = serializers.IntegerField(required=False, default=1)


class MachineLabelSerializer(serializers.ModelSerializer):
    annotator = serializers.CharField(source="run.annotator.name")
    dimension = serializers.CharField(source="dimension.key")
    categories = serializers.ListField(child=serializers.CharField())

    class Meta:
        model = MachineLabel
        fields = ["annotator", "run", "dimension", "categories", "confidence", "rationale"]
        read_only_fields = fields


class StudyMachineViewSet(StudyLookup, viewsets.GenericViewSet):
    """Machine annotators of a study (routes under studies/{slug}/machines/ and an item's
    machine-labels/)."""

    serializer_class = StudySerializer
    permission_classes = MANAGERS
    pagination_class = None  # an item's labels are few; the run list is cut at 100

    @extend_schema(
        request=MachineRunStartSerializer,
        responses={200: MachinesSerializer, 202: MachineRunSerializer, **ERRORS},
        description=(
            "GET: the study's machine annotators and their runs (managers). POST: add (or "
            "reuse) a machine annotator with these settings and queue a run of it over the "
            "study's items; 202 with the run. Its labels never count toward k nor enter gold."
        ),
    )
    @action(detail=True, methods=["get", "post"], permission_classes=MANAGERS)
    def machines(self, request, slug=None):
        study = self.get_object()
        if request.method == "POST":
            data = MachineRunStartSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            annotator, _ = machine_annotator_get_or_create(
                study=study, user=request.user, **data.validated_data
            )
            run = machine_run_request(annotator=annotator)
            return Response(MachineRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)
        return Response(
            MachinesSerializer(
                {
                    "annotators": study_machine_annotators(study=study),
                    "runs": study_machine_runs(study=study)[:100],
                }
            ).data
        )

    @extend_schema(
        request=None,
        responses={202: MachineRunSerializer, **ERRORS},
        description=(
            "Queue a run of the study's scikit-learn annotator (made on first use): TF-IDF of "
            "title, body and comments with a logistic regression per dimension, trained on the "
            "study's gold labels and cross-validated, so that no item with gold is labeled by "
            "a model that saw it (managers). A dimension with too little gold is skipped, with "
            "the reason in the run's parameters."
        ),
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="machines/classical",
        permission_classes=MANAGERS,
    )
    def machine_classical(self, request, slug=None):
        study = self.get_object()
        run = classical_run_request(study=study, user=request.user)
        return Response(MachineRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        request=MachineRaterSerializer,
        responses={200: SeatChangeSerializer, **ERRORS},
        description=(
            "Choose the language-model annotator that counts as one of the study's k raters "
            "(the one human replaced design), or none (managers). The machine takes a seat on "
            "every open item that needs two raters or more (a free one, or one a person has not "
            "opened) and fills it with its labels, which then count toward k, in the human "
            "figures and in gold; none gives the unfilled seats back. Recorded in the activity "
            "log; a 400 for the scikit-learn annotator or a closed study."
        ),
    )
    @action(
        detail=True,
        methods=["put"],
        url_path="machines/rater",
        permission_classes=MANAGERS,
    )
    def machine_rater(self, request, slug=None):
        study = self.get_object()
        data = MachineRaterSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data["annotator"]
        annotator = None
        if name is not None:
            annotator = study_machine_annotators(study=study).filter(name=name).first()
            if annotator is None:
                raise NotFound("No such machine annotator in this study.")
        change = study_machine_rater_set(study=study, annotator=annotator, by=request.user)
        return Response(
            SeatChangeSerializer(
                {
                    "machine_rater": annotator.name if annotator else None,
                    "taken": change.taken,
                    "withdrawn": change.withdrawn,
                    "filled": change.filled,
                    "given_back": change.given_back,
                }
            ).data
        )

    @extend_schema(
        parameters=[RUN_ID],
        responses={200: MachineRunRecordSerializer, 404: ERRORS[404]},
        description="A machine run's record: model, endpoint host, parameters, the prompt "
        "template and its hash, dates, requests, tokens and failures (managers).",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"machines/runs/(?P<run_id>[0-9]+)",
        permission_classes=MANAGERS,
    )
    def machine_run(self, request, slug=None, run_id=None):
        study = self.get_object()
        run = study_machine_runs(study=study).filter(pk=_item_id(run_id)).first()
        if run is None:
            raise NotFound("No such run.")
        return Response(MachineRunRecordSerializer(run).data)

    @extend_schema(
        request=None,
        parameters=[RUN_ID],
        responses={202: MachineRunSerializer, **ERRORS},
        description="Queue a stopped run again: a failed or interrupted run, or one with failed "
        "items. Only what it has not labeled yet is tried again (managers); a 400 for a run "
        "that is queued, running under a live lease or finished without failures.",
    )
    @action(
        detail=True,
        methods=["post"],
        url_path=r"machines/runs/(?P<run_id>[0-9]+)/resume",
        permission_classes=MANAGERS,
    )
    def machine_run_resume(self, request, slug=None, run_id=None):
        study = self.get_object()
        run = study_machine_runs(study=study).filter(pk=_item_id(run_id)).first()
        if run is None:
            raise NotFound("No such run.")
        run = machine_run_resume(run=run)
        return Response(MachineRunSerializer(run).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.STR, 403: ERRORS[403], 404: ERRORS[404]},
        description="The machine annotators' labels, apart from people's: CSV, one row per "
        "machine label, naming the annotator's kind and its confidence's source (managers), as "
        "the export page gives it. Each run's record is at machines/runs/{run_id}/.",
    )
    @action(
        detail=True,
        methods=["get"],
        url_path="machines/export",
        permission_classes=MANAGERS,
    )
    def machines_export(self, request, slug=None):
        study = self.get_object()
        response = HttpResponse(
            machine_labels_csv(study=study), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{study.slug}-machine-labels.csv"'
        return response

    @extend_schema(
        parameters=[ITEM_ID],
        responses={200: MachineLabelSerializer(many=True), 404: ERRORS[404]},
        description=(
            "The machines' labels of an item (each machine's latest). Blind: a 404 for whoever "
            "has not submitted their own labels of the item, for annotators, and for "
            "adjudicators until the item is in resolution."
        ),
    )
    @action(
        detail=True,
        methods=["get"],
        url_path=r"items/(?P<item_id>[^/.]+)/machine-labels",
        permission_classes=MEMBERS,
    )
    def machine_labels(self, request, slug=None, item_id=None):
        study = self.get_object()
        item = StudyItem.objects.filter(study=study, pk=_item_id(item_id)).first()
        roles = study_roles(study=study, user=request.user)
        if item is None or not machine_labels_visible_to(item=item, user=request.user, roles=roles):
            raise NotFound("No such item.")
        return Response(MachineLabelSerializer(item_machine_labels(item=item), many=True).data)
