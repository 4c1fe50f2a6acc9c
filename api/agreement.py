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
    ase = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="large-sample standard error of kappa (Fleiss, Cohen & Everitt 1969); null "
        "for multi-label dimensions",
    )
    ci95_wald = _interval("kappa +- 1.96 ase, clipped to [-1, 1]", required=False)
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
    kappa = serializers.FloatField(
        allow_null=True, help_text="one-vs-rest Cohen's kappa averaged over the counted pairs"
    )
    fleiss_kappa = serializers.FloatField(
        allow_null=True, required=False, help_text="Fleiss' (1971) category-specific kappa"
    )
    specific_agreement = serializers.FloatField(
        allow_null=True,
        required=False,
        help_text="positive specific agreement 2 n_cc / (n_c. + n_.c), averaged over pairs",
    )
    support = serializers.IntegerField(help_text="ratings choosing the category")


class HeadlinePairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    n = serializers.IntegerField()
    kappa = serializers.FloatField(allow_null=True)


class HeadlineSerializer(serializers.Serializer):
    statistic = serializers.ChoiceField(
        choices=["pair", "mean", "weighted_mean", "pairs_below_minimum"],
        allow_null=True,
        help_text="which kappa summarises the dimension (see the agreement methods page)",
    )
    label = serializers.CharField(allow_null=True)
    value = serializers.FloatField(allow_null=True)
    ci95 = _interval("the headline's 95% interval")
    interval_method = serializers.ChoiceField(choices=["bootstrap", "wald"], allow_null=True)
    interpretation = serializers.CharField(allow_null=True, help_text="Landis & Koch wording")
    pairs = HeadlinePairSerializer(
        many=True, help_text="pairs_below_minimum only: each pair's kappa, below the minimum"
    )


class AppliesWhenSerializer(serializers.Serializer):
    dimension = serializers.CharField()
    dimension_name = serializers.CharField()
    categories = serializers.ListField(child=serializers.CharField())


def _coefficient(help_text: str) -> serializers.FloatField:
    return serializers.FloatField(allow_null=True, required=False, help_text=help_text)


class DelegationRowSerializer(serializers.Serializer):
    threshold = serializers.FloatField(help_text="a confidence threshold")
    n = serializers.IntegerField(required=False, help_text="items with gold the machine takes")
    share = serializers.FloatField(
        allow_null=True, help_text="share of the items with gold whose confidence reaches it"
    )
    agreement_with_gold = serializers.FloatField(
        allow_null=True, help_text="of those, the share labeled exactly as gold"
    )


class MachineCategorySerializer(serializers.Serializer):
    precision = serializers.FloatField(allow_null=True)
    recall = serializers.FloatField(allow_null=True)
    support = serializers.IntegerField(help_text="gold's count of the category")


class MachineAgreementSerializer(serializers.Serializer):
    """One machine annotator on one dimension, measured like a person but apart from them."""

    n_items = serializers.IntegerField(required=False, help_text="items the machine labeled")
    n_gold = serializers.IntegerField(required=False, help_text="of those, items with gold")
    kappa_vs_gold = serializers.FloatField(allow_null=True)
    kappa_vs_humans = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="annotator -> Cohen's kappa"
    )
    precision = serializers.FloatField(allow_null=True, help_text="macro mean against gold")
    recall = serializers.FloatField(allow_null=True, help_text="macro mean against gold")
    per_category = serializers.DictField(child=MachineCategorySerializer(), required=False)
    delegation = DelegationRowSerializer(many=True)
    counts_as_rater = serializers.BooleanField(
        required=False,
        help_text='the study chose it as one of its k raters (the "one human replaced" design)',
    )


class MachinePairSerializer(serializers.Serializer):
    a = serializers.CharField()
    b = serializers.CharField()
    n = serializers.IntegerField(help_text="items both machines labeled")
    kappa = serializers.FloatField(allow_null=True)


class DimensionAgreementSerializer(serializers.Serializer):
    name = serializers.CharField()
    multi_label = serializers.BooleanField()
    required = serializers.BooleanField()
    n_items = serializers.IntegerField(help_text="items with at least two ratings")
    n_annotators = serializers.IntegerField()
    ordinal = serializers.BooleanField(required=False)
    kappa_weights = serializers.ChoiceField(
        choices=["linear", "quadratic"],
        allow_null=True,
        required=False,
        help_text="weights of Cohen's kappa; null on nominal dimensions",
    )
    applies_when = AppliesWhenSerializer(
        allow_null=True,
        required=False,
        help_text="the dimension counts only ratings for which this condition held",
    )
    percent_agreement = serializers.FloatField(
        allow_null=True,
        help_text="mean over items of the share of agreeing rating pairs (Fleiss' P-bar)",
    )
    percent_agreement_all = _coefficient("share of items on which every rating is the same")
    cohen_kappa = CohenKappaSerializer()
    headline = HeadlineSerializer(required=False)
    fleiss_kappa = serializers.FloatField(
        allow_null=True, help_text="Fleiss (1971); null when items carry unequal numbers of ratings"
    )
    fleiss_kappa_gwet = _coefficient("Gwet's (2014) generalisation, as irrCAC computes it")
    fleiss_kappa_ci95 = _interval("bootstrap 95% interval of Fleiss' kappa", required=False)
    krippendorff_alpha = serializers.FloatField(
        allow_null=True, help_text="nominal, or with the MASI distance on multi-label dimensions"
    )
    krippendorff_alpha_ci95 = _interval("bootstrap 95% interval of alpha", required=False)
    krippendorff_alpha_ordinal = _coefficient("ordinal dimensions: ordinal alpha")
    krippendorff_alpha_interval = _coefficient("ordinal dimensions: interval alpha")
    krippendorff_alpha_ratio = _coefficient("ordinal dimensions: ratio alpha")
    krippendorff_alpha_jaccard = _coefficient("multi-label: alpha with the Jaccard distance")
    exact_set_agreement = _coefficient("multi-label: share of rating pairs with identical sets")
    mean_jaccard = _coefficient("multi-label: mean pairwise Jaccard similarity")
    mean_masi_similarity = _coefficient("multi-label: mean pairwise MASI similarity")
    per_category = serializers.DictField(
        child=CategoryAgreementSerializer(), help_text="category key -> its agreement"
    )
    units = serializers.DictField(
        child=serializers.CharField(),
        required=False,
        help_text="figure -> what it is computed on, in words",
    )
    warnings = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="sentences for the reader"
    )
    warning_kinds = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="a code per warning"
    )
    machines = serializers.DictField(
        child=MachineAgreementSerializer(),
        required=False,
        help_text="machine annotator name -> its figures; the human figures above never count "
        "machine labels",
    )
    machine_pairs = MachinePairSerializer(
        many=True, required=False, help_text="Cohen's kappa of every pair of machine annotators"
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
    weights = serializers.CharField(
        allow_null=True, required=False, help_text="kappa weights in force on ordinal dimensions"
    )
    min_pair_items = serializers.IntegerField(required=False)
    min_items_for_kappa = serializers.IntegerField(required=False)


class AgreementReportSerializer(serializers.Serializer):
    study = serializers.CharField(help_text="the study's slug")
    filters = AgreementFiltersSerializer(required=False)
    dimensions = serializers.DictField(
        child=DimensionAgreementSerializer(), help_text="dimension key -> its agreement"
    )
    methods_url = serializers.CharField(
        required=False, help_text="the documentation of every figure: formula, variant, citation"
    )
