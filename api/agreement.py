"""The agreement report's shape (labeling.agreement_report.study_agreement_report), for the
schema: the report is built as plain data by the agreement modules, and these serializers only
describe it. A metric undefined for the data is null, never an error.

Keys the report gained after its first shape (the weighted mean, counted pairs, warnings, the
minimum overlap) are optional here, so that a report of either shape conforms.
"""

from rest_framework import serializers


def _interval(help_text: str, **options) -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(),
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text=help_text,
        **options,
    )


class ConfusionSerializer(serializers.Serializer):
    labels = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        help_text='the values in matrix order ("" is "none applies")',
    )
    matrix = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        help_text="counts: rows annotator a, columns annotator b",
    )
    binary = serializers.DictField(
        child=serializers.ListField(child=serializers.ListField(child=serializers.IntegerField())),
        required=False,
        help_text="multi-label dimensions: per category the 2x2 table [[neither, only b], "
        "[only a, both]]",
    )


class KappaPairSerializer(serializers.Serializer):
    a = serializers.CharField(help_text="an annotator")
    b = serializers.CharField(help_text="another annotator")
    n = serializers.IntegerField(help_text="items both rated")
    kappa = serializers.FloatField(allow_null=True)
    ci95 = _interval("bootstrap 95% interval; null without bootstrap or when undefined")
    counted = serializers.BooleanField(
        required=False, help_text="whether the pair enters the means (enough shared items)"
    )
    confusion = ConfusionSerializer()


class CohenKappaSerializer(serializers.Serializer):
    mean = serializers.FloatField(allow_null=True, help_text="over the counted pairs")
    interpretation = serializers.CharField(
        allow_null=True, help_text="Landis & Koch wording of the mean"
    )
    ci95 = _interval("bootstrap 95% interval of the mean")
    weighted_mean = serializers.FloatField(
        allow_null=True, required=False, help_text="weighted by the items each pair shares"
    )
    weighted_ci95 = _interval("bootstrap 95% interval of the weighted mean", required=False)
    n_pairs = serializers.IntegerField(required=False)
    n_pairs_counted = serializers.IntegerField(required=False)
    min_pair_items = serializers.IntegerField(
        required=False, help_text="the shared items a pair needs to count"
    )
    pairs = KappaPairSerializer(many=True)


class CategoryAgreementSerializer(serializers.Serializer):
    kappa = serializers.FloatField(allow_null=True)
    support = serializers.IntegerField(help_text="ratings choosing the category")


class DimensionAgreementSerializer(serializers.Serializer):
    name = serializers.CharField()
    multi_label = serializers.BooleanField()
    required = serializers.BooleanField()
    n_items = serializers.IntegerField(help_text="items with at least two ratings")
    n_annotators = serializers.IntegerField()
    percent_agreement = serializers.FloatField(
        allow_null=True, help_text="share of items on which every rating is the same"
    )
    cohen_kappa = CohenKappaSerializer()
    fleiss_kappa = serializers.FloatField(allow_null=True)
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    per_category = serializers.DictField(
        child=CategoryAgreementSerializer(), help_text="category key -> its agreement"
    )
    warnings = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="sentences for the reader"
    )


class AgreementFiltersSerializer(serializers.Serializer):
    """What the report was asked for, so that every rendering of it can state it."""

    round = serializers.CharField(allow_null=True)
    repository = serializers.CharField(allow_null=True)
    level = serializers.IntegerField(allow_null=True)
    bootstrap = serializers.IntegerField()
    seed = serializers.IntegerField()
    submitted_after = serializers.DateTimeField(allow_null=True, required=False)
    submitted_before = serializers.DateTimeField(allow_null=True, required=False)
    weights = serializers.CharField(allow_null=True, required=False)
    min_pair_items = serializers.IntegerField(required=False)
    min_items_for_kappa = serializers.IntegerField(required=False)


class AgreementReportSerializer(serializers.Serializer):
    study = serializers.CharField(help_text="the study's slug")
    filters = AgreementFiltersSerializer(required=False)
    dimensions = serializers.DictField(
        child=DimensionAgreementSerializer(), help_text="dimension key -> its agreement"
    )
