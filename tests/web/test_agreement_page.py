"""The agreement page as a person reads it: a pilot's page says each kind of warning once, its
κ/α chart marks every dimension (each pair's κ "below the minimum" where no pair is counted),
categories go by name, every figure of the selected dimension is there with its unit and its
methods entry, and the page still reads its labels once."""

from html.parser import HTMLParser

import pytest
from django.core.management import call_command
from django.utils.html import escape

from labeling.agreement_methods import methods_url
from labeling.agreement_report import study_agreement_report
from labeling.services.studies import study_create
from taxonomy.services import codebook_load
from tests.web.agreement_pilot import pilot_study_create

TIMES = "\u00d7"


@pytest.fixture
def pilot_study(db, codebook_version, sample_issues, people, make_user, tmp_path):
    return pilot_study_create(
        codebook_version=codebook_version,
        issues=sample_issues,
        manager=people["manager"],
        make_user=make_user,
        tmp_path=tmp_path,
    )


def page(client, people, url: str) -> str:
    client.force_login(people["manager"])
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


class ReadText(HTMLParser):
    """The page's text as a person reads it before opening anything: text inside a <details>
    (but not its <summary>) is folded; the summaries of the warnings are collected."""

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.shown: list[str] = []
        self.warning_lines: list[str] = []
        self._in_warnings = 0

    def handle_starttag(self, tag, attrs):
        if tag in ("details", "summary"):
            self.open.append(tag)
        if tag == "section" and ("class", "agreement-warnings") in attrs:
            self._in_warnings = 1
        if tag == "summary" and self._in_warnings:
            self.warning_lines.append("")

    def handle_endtag(self, tag):
        if tag in ("details", "summary") and self.open and self.open[-1] == tag:
            self.open.pop()
        if tag == "section":
            self._in_warnings = 0

    def handle_data(self, data):
        folded = "details" in self.open and self.open[-1] != "summary"
        if not folded:
            self.shown.append(data)
            if self._in_warnings and self.open and self.open[-1] == "summary":
                self.warning_lines[-1] += data


def read(html: str) -> ReadText:
    reader = ReadText()
    reader.feed(html)
    return reader


def test_a_pilot_of_nine_dimensions_says_each_kind_of_warning_on_one_line(
    pilot_study, people, client
):
    report = study_agreement_report(study=pilot_study)
    assert len(report["dimensions"]) == 9
    kinds = {kind for d in report["dimensions"].values() for kind in d["warning_kinds"]}
    assert kinds == {"few_items", "no_pair_counted", "unequal_ratings"}
    sentences = {text for d in report["dimensions"].values() for text in d["warnings"]}

    html = page(client, people, "/studies/pilot/agreement/?dimension=symptom")
    reader = read(html)
    assert len(reader.warning_lines) <= len(kinds)
    shown = " ".join(" ".join(reader.shown).split())
    # Each sentence is there once a kind, folded; none is in the text a person reads first
    # (not in the tables' notes either, which the downloads keep).
    for sentence in sentences:
        assert sentence.replace("'", "&#x27;") in html
        assert sentence not in shown
    lines = [" ".join(line.split()) for line in reader.warning_lines]
    assert "Few items: the kappas are imprecise: every dimension" in lines
    unequal = next(line for line in lines if line.startswith("Unequal numbers of ratings"))
    # The dimensions that apply to included items only; the optional ones have two raters.
    assert unequal.endswith(
        "Symptom, Root cause, Fix pattern, Debugging practice, Testing practice, Stage"
    )


def test_a_study_without_labels_has_one_warning_line(study, people, client):
    html = page(client, people, "/studies/demo/agreement/")
    reader = read(html)
    assert [" ".join(line.split()) for line in reader.warning_lines] == [
        "No item with two or more ratings: every dimension"
    ]
    assert "No κ or α to chart yet" in html and 'class="mark' not in html
    assert "No item has two or more ratings on Screening under these filters yet." in html


def test_a_pilot_shows_each_pairs_kappa_below_the_minimum_where_the_headline_would_be(
    pilot_study, people, client
):
    report = study_agreement_report(study=pilot_study)
    symptom = report["dimensions"]["symptom"]
    assert symptom["headline"]["statistic"] == "pairs_below_minimum"
    html = page(client, people, "/studies/pilot/agreement/?dimension=symptom")
    headline = html[html.index('data-figure="headline"') :]
    headline = headline[: headline.index("</div>")]
    assert "no pair shares 10 items" in headline
    for pair in symptom["headline"]["pairs"]:
        assert (
            f"{pair['a']} {TIMES} {pair['b']}: κ {pair['kappa']:.3f} on {pair['n']} items, "
            "below the minimum of 10 shared items"
        ) in headline
    # The chart: a hollow mark per pair of every dimension, an α mark per dimension, and no
    # headline mark; each mark has its words.
    pairs = sum(len(d["headline"]["pairs"]) for d in report["dimensions"].values())
    assert html.count('class="mark pair"') == pairs
    assert html.count('class="mark alpha"') == 9
    assert html.count('class="mark kappa"') == 0
    assert (
        f"Symptom: annotator1 {TIMES} annotator2: κ 0.500 on 6 shared items, below the minimum "
        "of 10 shared items"
    ) in html
    assert 'role="img" aria-label="Cohen&#x27;s κ and Krippendorff&#x27;s α per dimension' in html


def test_categories_go_by_their_names_in_the_tables_and_the_confusion_matrix(
    pilot_study, people, client
):
    html = page(client, people, "/studies/pilot/agreement/?dimension=symptom")
    for key, name in [
        ("crash_communication", "Communication Failure"),
        ("excessive_memory_usage", "Excessive Memory Usage / Leak"),
        ("numerical_anomaly", "Numerical Anomaly"),
    ]:
        assert key not in html
        assert f'<th scope="row">{name}</th>' in html  # per category, the matrix as a table
        assert f'class="axis-label row-label">{name}</text>' in html
        assert f'class="axis-label column-label">{name}</text>' in html
    assert "Confusion matrix of annotator1 and annotator2 on Symptom" in html
    assert (
        f"annotator1: Excessive Memory Usage / Leak {TIMES} annotator2: Numerical Anomaly" in html
    )


def test_the_selected_dimension_shows_its_figures_with_units_and_methods_links(
    pilot_study, people, client
):
    report = study_agreement_report(study=pilot_study)
    symptom = report["dimensions"]["symptom"]
    html = page(client, people, "/studies/pilot/agreement/?dimension=symptom")
    assert (
        "Symptom counts only the ratings of annotators who chose “Include” on Screening"
    ) in html
    for key, name in [
        ("percent_agreement", "Percent agreement (pairs)"),
        ("fleiss_kappa", "Fleiss&#x27; κ (classic)"),
        ("fleiss_kappa_gwet", "Fleiss&#x27; κ (Gwet&#x27;s generalisation)"),
        ("krippendorff_alpha", "Krippendorff&#x27;s α"),
    ]:
        assert f'<a href="{methods_url(key)}">{name}</a>' in html
    assert f'<a href="{methods_url("percent_agreement_all")}">All ratings agree</a>' in html
    assert f'<a href="{methods_url("headline")}">Cohen&#x27;s κ</a>' in html
    assert f"{100 * symptom['percent_agreement']:.1f}%" in html
    assert f"{100 * symptom['percent_agreement_all']:.1f}%" in html
    assert f"{symptom['fleiss_kappa_gwet']:.3f}" in html
    for unit in symptom["units"].values():
        assert escape(unit) in html
    # Classic Fleiss is not given, and the page says why.
    assert symptom["fleiss_kappa"] is None
    assert "not defined when items carry unequal numbers of ratings" in html
    # Pairs: the standard error and Wald interval of each; categories: Fleiss' and specific
    # agreement; their titles link to their methods entries.
    assert f'<a href="{methods_url("ase")}" class="methods-link"' in html
    pair = symptom["cohen_kappa"]["pairs"][0]
    low, high = pair["ci95_wald"]
    assert f"{pair['ase']:.3f}" in html
    # The Wald interval in one cell, or its ends in two where the table has them.
    assert f"[{low:.2f}, {high:.2f}]" in html or (
        f">{low:.3f}<" in html and f">{high:.3f}<" in html
    )
    for key in ("per_category.fleiss_kappa", "per_category.specific_agreement"):
        assert f'<a href="{methods_url(key)}" class="methods-link"' in html


def test_a_multi_label_dimension_shows_its_set_measures(pilot_study, people, client):
    report = study_agreement_report(study=pilot_study)
    practice = report["dimensions"]["debugging_practice"]
    html = page(client, people, "/studies/pilot/agreement/?dimension=debugging_practice")
    for key, name, text in [
        ("krippendorff_alpha", "Krippendorff's α (MASI)", f"{practice['krippendorff_alpha']:.3f}"),
        ("krippendorff_alpha_jaccard", "Krippendorff's α (Jaccard)", None),
        ("exact_set_agreement", "Exact set agreement", None),
        ("mean_jaccard", "Mean Jaccard similarity", None),
        ("mean_masi_similarity", "Mean MASI similarity", None),
    ]:
        value = practice[key]
        text = text or (f"{100 * value:.1f}%" if key == "exact_set_agreement" else f"{value:.3f}")
        figure = html[html.index(f'data-figure="{key}"') :]
        figure = figure[: figure.index("</div>")]
        assert f'<a href="{methods_url(key)}">{escape(name)}</a>' in figure
        assert f'<dd class="value">{text}' in figure
        assert f'<dd class="unit">{escape(practice["units"][key])}</dd>' in figure


SEVERITY_CODEBOOK = {
    "name": "severity",
    "version": "1",
    "dimensions": [
        {
            "key": "severity",
            "name": "Severity",
            "ordinal": True,
            "categories": [
                {"key": "low", "name": "Low", "value": 1},
                {"key": "medium", "name": "Medium", "value": 2},
                {"key": "high", "name": "High", "value": 5},
            ],
        }
    ],
}
# Two readers of twelve issues: one pair, counted, whose κ is the headline with a Wald interval.
SEVERITY_RATINGS = [("low", "low")] * 4 + [("medium", "medium")] * 3 + [("high", "high")] * 2
SEVERITY_RATINGS += [("low", "medium"), ("medium", "high"), ("high", "low")]


@pytest.fixture
def severity_study(db, sample_issues, people, tmp_path):
    version, _ = codebook_load(data=SEVERITY_CODEBOOK, publish=True)
    study = study_create(
        slug="severity", name="Severity", codebook_version=version, managers=[people["manager"]]
    )
    rows = []
    for issue, (a, b) in zip(sample_issues, SEVERITY_RATINGS, strict=False):
        reference = f"{issue.repository.full_name}#{issue.number}"
        rows += [f"{reference},reader_a,severity,{a}", f"{reference},reader_b,severity,{b}"]
    path = tmp_path / "severity.csv"
    path.write_text("issue,annotator,dimension,labels\n" + "\n".join(rows) + "\n")
    call_command("import_annotations", "--study", "severity", str(path), "--create-users")
    return study


def test_an_ordinal_dimension_shows_its_weighted_kappa_with_interval_and_metric_alphas(
    severity_study, people, client
):
    severity = study_agreement_report(study=severity_study)["dimensions"]["severity"]
    headline = severity["headline"]
    assert headline["statistic"] == "pair" and headline["interval_method"] == "wald"
    html = page(client, people, "/studies/severity/agreement/")
    low, high = headline["ci95"]
    figure = html[html.index('data-figure="headline"') :]
    figure = figure[: figure.index("</div>")]
    assert "Cohen&#x27;s κ (linear weights)" in figure
    assert f"{headline['value']:.3f}" in figure
    assert f"[{low:.2f}, {high:.2f}]" in figure and "95% Wald" in figure
    assert "1 of 1 pairs counted" in figure
    for key, name in [
        ("krippendorff_alpha_ordinal", "Krippendorff&#x27;s α, ordinal"),
        ("krippendorff_alpha_interval", "Krippendorff&#x27;s α, interval"),
        ("krippendorff_alpha_ratio", "Krippendorff&#x27;s α, ratio"),
    ]:
        assert f'<a href="{methods_url(key)}">{name}</a>' in html
        assert f"{severity[key]:.3f}" in html
    # The chart: the headline κ as a filled mark with its whisker, α beside it.
    assert html.count('class="mark kappa"') == 1
    assert html.count('class="whisker kappa"') == 3  # the line and its two ends
    assert f"Severity: Cohen&#x27;s κ of the one pair of annotators {headline['value']:.3f}" in html
    # The confusion matrix names the categories, the pair's axes name the readers.
    assert 'class="axis-title">rows: reader_a</text>' in html
    assert 'class="axis-label column-label">Medium</text>' in html


def test_the_pilot_page_reads_its_labels_once(
    pilot_study, people, client, django_assert_max_num_queries
):
    client.force_login(people["manager"])
    # The bound of the page in tests/labeling/test_agreement_report.py: the category names
    # come with the label table's read of the categories.
    # 14: the machine annotators' labels are read once per report, even when a study has none.
    with django_assert_max_num_queries(15):  # with the top bar's study switcher
        assert client.get("/studies/pilot/agreement/?dimension=symptom").status_code == 200


def test_category_and_annotator_names_are_escaped_in_the_figures(
    db, sample_issues, people, client, tmp_path
):
    hostile = '<img src=x onerror="alert(1)">'
    codebook = {
        "name": "hostile",
        "version": "1",
        "dimensions": [
            {
                "key": "decision",
                "name": "Decision <b>",
                "categories": [{"key": "yes", "name": hostile}, {"key": "no", "name": "No"}],
            }
        ],
    }
    version, _ = codebook_load(data=codebook, publish=True)
    study_create(
        slug="hostile", name="Hostile", codebook_version=version, managers=[people["manager"]]
    )
    rows = [
        f"{issue.repository.full_name}#{issue.number},reader_a,decision,{a}\n"
        f"{issue.repository.full_name}#{issue.number},reader_b,decision,{b}"
        for issue, (a, b) in zip(
            sample_issues, [("yes", "yes"), ("yes", "no"), ("no", "no")] * 4, strict=False
        )
    ]
    path = tmp_path / "hostile.csv"
    path.write_text("issue,annotator,dimension,labels\n" + "\n".join(rows) + "\n")
    call_command("import_annotations", "--study", "hostile", str(path), "--create-users")
    html = page(client, people, "/studies/hostile/agreement/")
    assert hostile not in html and "<b>" not in html
    assert escape(hostile) in html and "Decision &lt;b&gt;" in html
