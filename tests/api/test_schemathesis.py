"""A bounded schemathesis run over the API's own OpenAPI schema: every operation gets generated
requests (valid and invalid, examples, boundaries and fuzzing), sent in-process to the Django
WSGI application against the test database, as a manager of a seeded study with an API token.

The schema and the API must agree, checked on every answer:

* no server error;
* its status is one the operation documents (status code conformance), its Content-Type one
  documented for that status (content-type conformance), its body the documented shape
  (response schema conformance): errors too, in the one error shape;
* a request that breaks the schema is refused (negative data rejection), except by a JSON
  scalar of another scalar type, which DRF reads leniently (42 where a string is expected as
  "42", 0 or "true" where a boolean is), as the schema's description says;
* a request the schema allows is never refused for a rule the schema could state (type, blank,
  length, range, choice, page): `schema_stated_rules_agree` below.

The run is seeded and derandomized, so that CI sees the same requests every time; a failure
prints the request that caused it (a curl line) to turn into a regression test.
"""

import json
import os

import pytest
import schemathesis
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.mutations import OperatorKind
from schemathesis.core.parameters import ParameterLocation
from schemathesis.generation.meta import CoveragePhaseData, CoverageScenario
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.models import ApiToken
from accounts.services import api_token_create
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from ingest.sources import source_create
from labeling.models import Assignment, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from labeling.services.setup import study_member_join
from labeling.services.studies import item_next_for_annotator, study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.services import codebook_load
from tests.conftest import CODEBOOK_FILE, PASSWORD, SAMPLE_ISSUES_FILE, SCREENED_IN

MAX_EXAMPLES = 10
# The coverage phase sends every boundary and wrong type of every field (about 4,600 requests,
# some seven minutes): run it with SCHEMATHESIS_COVERAGE=1 after changing the API. By default
# the run is the schema's examples and MAX_EXAMPLES generated requests an operation, valid and
# invalid, which keeps it to a couple of minutes.
COVERAGE = os.environ.get("SCHEMATHESIS_COVERAGE", "") == "1"
SEED = 20_261_203

# Operations left out, each for a reason that is not "it fails":
SKIPPED = {
    # The schema and the docs page are checked in test_schema.py; fuzzing them adds nothing.
    ("GET", "/api/schema/"),
}


@pytest.fixture(autouse=True)
def same_connection():
    """Requests run in this thread, on the test's own database connection.

    Django closes "old" connections at the start and end of every request; inside a test's
    transaction that would close the connection the test runs in. Django's own test client
    switches that off for its requests in the same way."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture(scope="module")
def seeded(django_db_setup, django_db_blocker):
    """The demo study with work in every state, built once for the module (inside a
    transaction rolled back at its end; each test's own writes roll back to a savepoint): the
    manager also labels and may create studies; one item disputed (in resolution), one
    agreed, a draft, a source."""
    with django_db_blocker.unblock(), transaction.atomic():
        codebook_version, _ = codebook_load(
            data=codebook_file_read(CODEBOOK_FILE.read_bytes()), publish=True
        )
        with SAMPLE_ISSUES_FILE.open("rb") as stream:
            issues_import(objects=issue_file_lines(stream))
        users = get_user_model().objects
        people = {
            name: users.create_user(username=name, password=PASSWORD)
            for name in ("manager", "annotator1", "annotator2", "adjudicator")
        }
        manager = people["manager"]
        study = study_create(
            slug="demo",
            name="Demo",
            codebook_version=codebook_version,
            annotators=[people["annotator1"], people["annotator2"]],
            managers=[manager],
            adjudicators=[people["adjudicator"]],
            issues=list(Issue.objects.all()),
        )
        manager.user_permissions.add(Permission.objects.get(codename="add_study"))
        study_member_join(study=study, user=manager, role="annotator")
        answers = {key: DimensionAnswer(category_keys=keys) for key, keys in SCREENED_IN.items()}
        other = {**answers, "root_cause": DimensionAnswer(category_keys=["configuration_error"])}
        for first, second in ((answers, other), (answers, answers)):
            for user, labels in ((people["annotator1"], first), (people["annotator2"], second)):
                assignment = item_next_for_annotator(study=study, user=user)
                assignment_save(assignment=assignment, user=user, answers=labels, submit=True)
        draft = item_next_for_annotator(study=study, user=manager)
        assignment_save(assignment=draft, user=manager, answers=answers, submit=False)
        source_create(repository="microsoft/DeepSpeed", labels=["bug"], created_by=manager)
        yield {
            "study": study,
            "manager": manager,
            "token": api_token_create(user=manager, name="schemathesis"),
            "item_ids": list(StudyItem.objects.filter(study=study).values_list("id", flat=True)),
            # The manager's own assignments: the ones a draft, a submit or a skip may write.
            "assignment_ids": list(
                Assignment.objects.filter(annotator=manager).values_list("id", flat=True)
            ),
        }
        transaction.set_rollback(True)


def _load_schema():
    """The schema as /api/schema/ serves it, generated here: loading it needs no database, and
    a schema loaded when the module is collected gives one test per operation."""
    generated = SchemaGenerator().get_schema(request=None, public=True)
    loaded = schemathesis.openapi.from_dict(json.loads(OpenApiJsonRenderer().render(generated)))
    loaded.app = WSGIHandler()
    loaded.config.seed = SEED
    loaded.config.phases.coverage.enabled = COVERAGE
    return loaded.exclude(
        func=lambda ctx: (ctx.operation.method.upper(), ctx.operation.path) in SKIPPED
    )


schema = _load_schema()


def _auth_header(seeded) -> dict[str, str]:
    """The manager's token, in force again: the run fuzzes DELETE /api/tokens/{id}/ too, and
    may revoke it (the test rolls that back only at its end)."""
    token, key = seeded["token"]
    ApiToken.objects.filter(pk=token.pk).update(revoked_at=None)
    # The WSGI transport hands the body over as sent, undecoded: ask for it uncompressed (a
    # client over HTTP decodes the gzip the API answers with; tests/web/test_compression.py).
    return {"Authorization": f"Token {key}", "Accept-Encoding": "identity"}


def _aim_at_the_seeded_study(case, seeded) -> None:
    """Random slugs and ids are almost always a 404 at the first lookup; most requests are
    aimed at the seeded study and its items instead, so that their queries and bodies reach
    the code behind the lookup. Odd generated ids keep their value, to fuzz the lookups too."""
    parameters = case.path_parameters or {}
    if "slug" in parameters:
        parameters["slug"] = seeded["study"].slug
    for name, ids in (("item_id", seeded["item_ids"]), ("id", seeded["assignment_ids"])):
        if name == "id" and not case.path.startswith("/api/assignments/"):
            continue
        if isinstance(parameters.get(name), int) and parameters[name] % 2 == 0:
            parameters[name] = ids[parameters[name] // 2 % len(ids)]


# DRF's messages for the rules a schema states (type, required, null, blank, length, range,
# choice), and the pagination's: a request the schema allows must never be refused with one.
SCHEMA_STATED_RULES = (
    "This field is required.",
    "This field may not be null.",
    "This field may not be blank.",
    "Ensure this field has no more than",
    "Ensure this field has at least",
    "Ensure this value is less than or equal to",
    "Ensure this value is greater than or equal to",
    "Ensure this value is between",
    "is not a valid choice.",
    "A valid integer is required.",
    "A valid number is required.",
    "Must be a valid boolean.",
    "Not a valid string.",
    "Expected a list of items",
    "Expected a dictionary of items",
    "This list may not be empty.",
    "A whole number of 1 or more.",
)


def _messages(details) -> list[str]:
    if isinstance(details, dict):
        return [message for value in details.values() for message in _messages(value)]
    if isinstance(details, list):
        return [message for value in details for message in _messages(value)]
    return [details] if isinstance(details, str) else []


def schema_stated_rules_agree(ctx, response, case) -> None:
    """A request generated as valid is never refused for a rule the schema states: what the
    schema allows (a blank field it does not mark minLength, a page it does not bound) the API
    takes. Refusals the schema cannot state (an unknown username, a rule between fields) stay
    allowed, as a 400 is documented for them."""
    if case.meta is None or case.meta.generation.mode.is_negative or response.status_code != 400:
        return None
    try:
        details = response.json()["error"]["details"]
    except (ValueError, KeyError, TypeError):
        return None
    stated = [m for m in _messages(details) if any(rule in m for rule in SCHEMA_STATED_RULES)]
    assert not stated, f"a request the schema allows was refused: {details}"
    return None


# JSON scalars of another type than the schema's, which DRF reads leniently (a number where a
# string is expected as its digits, "12" where a number is, 0 and 1 or "true" and "false" where
# a boolean is), as the schema's description says: refusing them is not asked of the API.
SCALAR_TYPES = {"string", "integer", "number", "boolean"}


def _scalar_type_change_only(case) -> bool:
    """Whether the case breaks the schema only by giving a scalar of another scalar type."""
    phase = case.meta.phase.data if case.meta is not None else None
    mutations = getattr(phase, "mutations", ())
    if mutations:
        return all(
            mutation.operator == OperatorKind.CHANGE_TYPE
            and set(str(mutation.original_value).split(" | ")) <= SCALAR_TYPES
            and mutation.new_value in SCALAR_TYPES
            for mutation in mutations
        )
    if (
        isinstance(phase, CoveragePhaseData)
        and phase.scenario == CoverageScenario.INCORRECT_TYPE
        and phase.parameter_location == ParameterLocation.BODY
        and phase.location
    ):
        # The location is the schema's pointer to the type: /properties/NAME/.../type.
        *pointer, last = phase.location.strip("/").split("/")
        if last != "type" or len(pointer) % 2 or set(pointer[::2]) != {"properties"}:
            return False
        value = case.body
        for key in pointer[1::2]:
            if not isinstance(value, dict) or key not in value:
                return False
            value = value[key]
        return isinstance(value, str | int | float)
    return False


def negative_data_refused(ctx, response, case) -> bool | None:
    if _scalar_type_change_only(case):
        return None
    return negative_data_rejection(ctx, response, case)


CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    negative_data_refused,
    schema_stated_rules_agree,
]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_the_api_answers_as_its_schema_says(case, seeded, db):
    _aim_at_the_seeded_study(case, seeded)
    case.call_and_validate(headers=_auth_header(seeded), checks=CHECKS)
