"""Shared fixtures. Data is built through the same services production uses."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from config.celery import app as celery_app
from corpus.issue_import import issue_file_lines
from corpus.models import Issue
from corpus.services import issues_import
from labeling.services.studies import study_create
from taxonomy.codebook_file import codebook_file_read
from taxonomy.services import codebook_load

CODEBOOK_FILE = Path(settings.BASE_DIR) / "taxonomy" / "data" / "llm-training-issues.json"
SAMPLE_ISSUES_FILE = Path(settings.BASE_DIR) / "corpus" / "data" / "sample-issues.jsonl"
IN_CI = os.environ.get("CI", "").lower() == "true"
PASSWORD = "a-long-test-password"  # every user `make_user` makes
# A complete submission on the starter codebook for an item screened in: every required
# dimension answered.
SCREENED_IN = {
    "screening": ["include"],
    "symptom": ["crash"],
    "root_cause": ["api_misuse"],
    "fix_pattern": ["fix_api_usage"],
    "debugging_practice": ["error_message_analysis"],
    "testing_practice": ["no_test_change"],
    "training_stage": ["model_initialization"],
}


def require_service(available: bool, what: str, how: str) -> None:
    """Skip a test whose service is missing, except in CI, where a missing service is a failure."""
    if available:
        return
    message = f"{what} is not available: {how}"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def require_postgres() -> None:
    from django.db import connection

    require_service(
        connection.vendor == "postgresql",
        "PostgreSQL",
        "set DATABASE_URL=postgres://postgres@127.0.0.1:5432/issuecoder to run this test",
    )


DATABASE_FIXTURES = {"db", "transactional_db", "_django_db_helper"}


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """After every test that used the database, each study item's `holders` must still be its
    number of assignments, and each assignment's study its item's: whatever a test did through
    the services kept them right."""
    result = yield
    if DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        from django.db.models import Count, F

        from labeling.models import Assignment, StudyItem

        miscounted = list(
            StudyItem.objects.annotate(n=Count("assignments"))
            .exclude(holders=F("n"))
            .values_list("id", "holders", "n")[:5]
        )
        assert not miscounted, f"items with miscounted holders (id, kept, real): {miscounted}"
        elsewhere = list(
            Assignment.objects.exclude(study_id=F("item__study_id")).values_list(
                "id", "study_id", "item__study_id"
            )[:5]
        )
        assert not elsewhere, f"assignments of another study than their item's: {elsewhere}"
    return result


@pytest.fixture(autouse=True)
def _cache_emptied() -> None:
    """Every test starts with an empty cache. Its entries are named by ids, and on SQLite a
    test's rolled-back rows hand their ids to the next test's: a study's cached state of its
    texts (machines.similar_panel) was then another test's study's, and the page showed that
    study's similar issues."""
    from django.core.cache import cache

    cache.clear()


@pytest.fixture
def inline_tasks() -> Iterator[None]:
    """Celery tasks run inline, as in the embedded default (forced, so that a test means the
    same with a broker configured, as in CI)."""
    before = (celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates)
    celery_app.conf.task_always_eager = celery_app.conf.task_eager_propagates = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = before


@pytest.fixture
def codebook_version(db):
    version, _ = codebook_load(data=codebook_file_read(CODEBOOK_FILE.read_bytes()), publish=True)
    return version


@pytest.fixture
def sample_issues(db):
    with SAMPLE_ISSUES_FILE.open("rb") as stream:
        issues_import(objects=issue_file_lines(stream))
    return list(Issue.objects.select_related("repository").order_by("repository", "number"))


@pytest.fixture
def make_user(db):
    def make(username: str, password: str = PASSWORD, **extra):
        return get_user_model().objects.create_user(username=username, password=password, **extra)

    return make


@pytest.fixture
def people(make_user):
    return {
        name: make_user(name)
        for name in ("manager", "annotator1", "annotator2", "adjudicator", "outsider")
    }


@pytest.fixture
def study(codebook_version, sample_issues, people):
    return study_create(
        slug="demo",
        name="Demo",
        codebook_version=codebook_version,
        k=2,
        annotators=[people["annotator1"], people["annotator2"]],
        managers=[people["manager"]],
        adjudicators=[people["adjudicator"]],
        issues=sample_issues,
    )
