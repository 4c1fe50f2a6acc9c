"""One rule for usernames, display names and study names (common.names), at every door: the
annotation import that creates users, the API's and the page's study setup, the create_study
command, the admin, and on the way back the dataset restore. A name with a NUL, a control
character, a bidirectional override or a zero-width character is refused with its place, and
nothing is stored; a name the rule accepts comes back from the study's own dataset."""

import orjson
import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from common.names import InvalidName, NameKind, name_check
from exports.formats import jsonl_read
from labeling.models import Annotation, Membership, Study
from tests.api.test_study_setup_api import body as api_setup_body
from tests.conftest import PASSWORD
from tests.web.test_study_setup_pages import setup_post as page_setup_post

RLO = "\u202e"  # RIGHT-TO-LEFT OVERRIDE: "admin\u202enimda" shows as "adminadmin"
ZWSP = "\u200b"  # ZERO WIDTH SPACE: "annotator\u200b1" looks like annotator1
HEADER = "issue,annotator,dimension,labels\n"
CODEBOOK_NAME = "llm-training-issues-starter"


# The rule


@pytest.mark.parametrize(
    ("kind", "value", "problem"),
    [
        ("username", "annot\x00ator1", "holds a NUL character (U+0000)"),
        ("username", f"eve{RLO}lin", "holds an invisible formatting character (U+202E"),
        ("username", f"annotator{ZWSP}1", "(U+200B ZERO WIDTH SPACE)"),
        ("username", "tab\there", "holds a control character (U+0009)"),
        ("username", "two words", "may hold only letters, digits and @ . + - _"),
        ("username", "x" * 151, "is longer than 150 characters (151)"),
        ("username", "", "is empty"),
        ("display name", "Ada\u2066 Lovelace", "(U+2066 LEFT-TO-RIGHT ISOLATE)"),
        ("display name", " Ada", "begins or ends with a space"),
        ("display name", "Ada\u2028Lovelace", "holds a line break (U+2028)"),
        ("study name", f"Pilot{RLO}", "holds an invisible formatting character"),
        ("study name", "Pilot\u200d", "(U+200D ZERO WIDTH JOINER)"),
        ("study name", "Pilot\ufeff", "(U+FEFF ZERO WIDTH NO-BREAK SPACE)"),
        ("study name", "x" * 201, "is longer than 200 characters"),
    ],
)
def test_names_that_read_otherwise_than_they_are_are_refused(kind, value, problem):
    with pytest.raises(InvalidName) as refused:
        name_check(value, kind)
    assert problem in str(refused.value)
    # The message quotes the name escaped: no override reaches a terminal or a page.
    assert RLO not in str(refused.value) and "\x00" not in str(refused.value)


@pytest.mark.parametrize(
    ("kind", "value", "stored"),
    [
        ("username", "José", "José"),
        ("username", "Jose\u0301", "José"),  # decomposed: normalised, one person
        ("username", "ﬁona", "fiona"),  # NFKC, as Django's login form reads it
        ("username", "李小龙", "李小龙"),
        ("username", "o.brien+lab@uni-x_y", "o.brien+lab@uni-x_y"),
        ("display name", "Zoe\u0308 O\u2019Brien", "Zoë O\u2019Brien"),
        ("display name", "ﬁona", "ﬁona"),  # NFC only: what people read keeps its letters
        ("study name", "Étude: LLM training bugs (pilot)", "Étude: LLM training bugs (pilot)"),
        ("study name", "דיפספיד bugs", "דיפספיד bugs"),  # right-to-left script, no override
    ],
)
def test_names_people_write_are_kept_normalised(kind, value, stored):
    assert name_check(value, NameKind(kind)) == stored


# The annotation import, which creates users


def _labels_file(tmp_path, sample_issues, *annotators: str):
    issue = f"{sample_issues[0].repository.full_name}#{sample_issues[0].number}"
    path = tmp_path / "labels.csv"
    path.write_text(
        HEADER + "".join(f"{issue},{name},screening,not_a_bug\n" for name in annotators),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    ("annotator", "problem"),
    [
        (f"eve{RLO}lin", "holds an invisible formatting character (U+202E RIGHT-TO-LEFT"),
        (f"annotator{ZWSP}2", "holds an invisible formatting character (U+200B ZERO WIDTH"),
        ("ﬁona", "is not in its normal form ('fiona')"),
    ],
)
def test_import_annotations_creates_no_user_with_such_a_name(
    study, sample_issues, tmp_path, annotator, problem
):
    path = _labels_file(tmp_path, sample_issues, "annotator1", annotator)
    users_before = get_user_model().objects.count()

    with pytest.raises(CommandError) as refused:
        call_command("import_annotations", "--study", "demo", str(path), "--create-users")

    assert f"{path}:3: annotator: username" in str(refused.value)
    assert problem in str(refused.value)
    assert get_user_model().objects.count() == users_before
    assert not Annotation.objects.exists()


def test_a_nul_in_a_name_is_an_error_not_another_annotator(study, sample_issues, tmp_path):
    path = _labels_file(tmp_path, sample_issues, "annot\x00ator1")

    with pytest.raises(CommandError) as refused:
        call_command("import_annotations", "--study", "demo", str(path), "--create-users")

    assert f"{path}:2: annotator holds a NUL character" in str(refused.value)
    assert not Annotation.objects.exists()


def test_names_the_rule_accepts_come_back_from_the_study_s_own_dataset(
    study, sample_issues, tmp_path
):
    names = ["José", "李小龙", "o.brien+lab@uni-x_y"]
    call_command(
        "import_annotations",
        "--study",
        "demo",
        str(_labels_file(tmp_path, sample_issues, *names)),
        "--create-users",
    )
    dataset = tmp_path / "dataset.jsonl"
    call_command("export_dataset", "--study", "demo", "--output", str(dataset), "--raw")

    call_command("import_dataset", str(dataset), "--study", "restored")

    restored = Study.objects.get(slug="restored")
    assert set(names) <= set(
        Membership.objects.filter(study=restored, role="annotator").values_list(
            "user__username", flat=True
        )
    )


# The dataset restore


def _dataset_rows(study, tmp_path) -> list[dict]:
    call_command("import_annotations", "--study", study.slug, str(_labels_of(study, tmp_path)))
    path = tmp_path / "dataset.jsonl"
    call_command("export_dataset", "--study", study.slug, "--output", str(path), "--raw")
    with path.open("rb") as stream:
        return [row for _, row in jsonl_read(stream)]


def _labels_of(study, tmp_path):
    path = tmp_path / "labels.csv"
    items = list(study.items.select_related("issue__repository").order_by("id")[:2])
    path.write_text(
        HEADER
        + "".join(
            f"{item.issue.repository.full_name}#{item.issue.number},annotator1,screening,"
            "not_a_bug\n"
            for item in items
        )
    )
    return path


def _write(path, rows) -> str:
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return str(path)


def test_a_restore_refuses_an_annotator_name_with_its_row(study, tmp_path):
    rows = _dataset_rows(study, tmp_path)
    rows[1]["raw"]["screening"][f"annotator{RLO}1"] = rows[1]["raw"]["screening"]["annotator1"]
    users_before = get_user_model().objects.count()

    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", _write(tmp_path / "bad.jsonl", rows), "--study", "again")

    assert (
        "line 2: raw.screening: username 'annotator\\u202e1' holds an invisible formatting "
        "character (U+202E RIGHT-TO-LEFT OVERRIDE)"
    ) in str(refused.value)
    assert not Study.objects.filter(slug="again").exists()
    assert get_user_model().objects.count() == users_before


def test_a_restore_refuses_a_study_name_with_an_override(study, tmp_path):
    rows = _dataset_rows(study, tmp_path)
    rows[0]["study_settings"]["name"] = f"Demo{RLO}"

    with pytest.raises(CommandError) as refused:
        call_command("import_dataset", _write(tmp_path / "bad.jsonl", rows), "--study", "again")

    assert "line 1: study_settings.name: study name 'Demo\\u202e' holds an invisible" in str(
        refused.value
    )
    assert not Study.objects.filter(slug="again").exists()


# Study names: the API, the page, the command, the admin


@pytest.fixture
def creator(people):
    manager = people["manager"]
    manager.user_permissions.add(Permission.objects.get(codename="add_study"))
    return manager


def test_the_api_refuses_a_study_name_with_an_override(creator, codebook_version, sample_issues):
    client = APIClient()
    client.force_authenticate(creator)

    response = client.post(
        "/api/studies/", api_setup_body(codebook_version, name=f"Paper{RLO}"), format="json"
    )

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert "invisible formatting character (U+202E" in error["details"]["name"][0]
    assert not Study.objects.filter(slug="paper").exists()


def test_the_api_stores_a_study_name_normalised(creator, codebook_version, sample_issues):
    client = APIClient()
    client.force_authenticate(creator)

    response = client.post(
        "/api/studies/", api_setup_body(codebook_version, name="Etude\u0301"), format="json"
    )

    assert response.status_code == 201, response.json()
    assert Study.objects.get(slug="paper").name == "Etudé"


def test_the_setup_page_refuses_a_study_name_with_a_zero_width_space(
    client, creator, people, codebook_version, sample_issues
):
    assert client.login(username=creator.username, password=PASSWORD)

    response = client.post(
        "/studies/new/", page_setup_post(codebook_version, people, name=f"Fixes{ZWSP}")
    )

    assert response.status_code == 400
    assert "invisible formatting character (U+200B ZERO WIDTH SPACE)" in response.content.decode()
    assert not Study.objects.filter(slug="fixes").exists()


def test_create_study_refuses_a_study_name_with_an_override(codebook_version):
    with pytest.raises(CommandError, match=r"study name 'Demo\\u202e' holds an invisible"):
        call_command("create_study", "named", "--codebook", CODEBOOK_NAME, "--name", f"Demo{RLO}")
    assert not Study.objects.filter(slug="named").exists()


@pytest.fixture
def admin_client(client, make_user):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    return client


def test_the_admin_refuses_a_study_name_with_an_override(admin_client, study):
    response = admin_client.post(
        f"/admin/labeling/study/{study.pk}/change/",
        {
            "name": f"Demo{RLO}",
            "description": "",
            "blind": "on",
            "status": study.status,
            **_empty_inlines(),
        },
    )

    assert response.status_code == 200
    assert "invisible formatting character (U+202E" in response.content.decode()
    study.refresh_from_db()
    assert study.name == "Demo"


def _empty_inlines() -> dict[str, str]:
    return {
        f"{prefix}-{key}": value
        for prefix in ("rounds", "memberships")
        for key, value in (("TOTAL_FORMS", "0"), ("INITIAL_FORMS", "0"))
    }


# Users in the admin


def test_the_admin_creates_no_user_with_a_zero_width_name(admin_client):
    response = admin_client.post("/admin/auth/user/add/", {"username": f"annotator{ZWSP}1"})

    assert response.status_code == 200
    assert "This username holds an invisible formatting character" in response.content.decode()
    assert not get_user_model().objects.filter(username__startswith="annotator").exists()


def test_the_admin_refuses_a_display_name_with_an_override(admin_client, people):
    user = people["annotator1"]
    response = admin_client.post(
        f"/admin/auth/user/{user.pk}/change/",
        {
            "username": user.username,
            "first_name": f"Ada{RLO}",
            "last_name": "Lovelace",
            "email": "",
            "is_active": "on",
            "date_joined_0": "2025-01-01",
            "date_joined_1": "00:00:00",
        },
    )

    assert response.status_code == 200
    assert "This display name holds an invisible formatting character" in response.content.decode()
    user.refresh_from_db()
    assert user.first_name == ""


def test_the_admin_stores_display_names_normalised(admin_client, people):
    user = people["annotator1"]
    response = admin_client.post(
        f"/admin/auth/user/{user.pk}/change/",
        {
            "username": user.username,
            "first_name": "Zoe\u0308",
            "last_name": "O\u2019Brien",
            "email": "",
            "is_active": "on",
            "date_joined_0": "2025-01-01",
            "date_joined_1": "00:00:00",
        },
    )

    assert response.status_code == 302
    user.refresh_from_db()
    assert user.first_name == "Zoë"
