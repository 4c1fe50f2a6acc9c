"""A bounded schemathesis run over the API's own OpenAPI schema: every operation gets generated
requests (valid and invalid, examples, boundaries and fuzzing), sent in-process to the Django
WSGI application against the test database, as a manager of a seeded study with an API token.
No answer may be a server error, and every answer of a documented status must match its
documented shape.

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
from schemathesis.specs.openapi.checks import response_schema_conformance

from accounts.models import ApiToken
from accounts.services import api_token_create
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from ingest.sources import source_create
from labeling.models import StudyItem
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
    return {"Authorization": f"Token {key}"}


def _aim_at_the_seeded_study(case, seeded) -> None:
    """Random slugs and ids are almost always a 404 at the first lookup; most requests are
    aimed at the seeded study and its items instead, so that their queries and bodies reach
    the code behind the lookup. Odd generated ids keep their value, to fuzz the lookups too."""
    parameters = case.path_parameters or {}
    if "slug" in parameters:
        parameters["slug"] = seeded["study"].slug
    item_ids = seeded["item_ids"]
    if isinstance(parameters.get("item_id"), int) and parameters["item_id"] % 2 == 0:
        parameters["item_id"] = item_ids[parameters["item_id"] // 2 % len(item_ids)]


@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_request_is_a_server_error(case, seeded, db):
    _aim_at_the_seeded_study(case, seeded)
    case.call_and_validate(
        headers=_auth_header(seeded),
        checks=[not_a_server_error, response_schema_conformance],
    )
