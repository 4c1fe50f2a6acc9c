"""Redis restarted (empty: no persistence) while a worker syncs a repository: the run still
finishes, with every upstream issue stored exactly once."""

import uuid

import pytest
from django.db.models import Count
from kombu import Connection

from corpus.models import Issue
from ingest.dispatch import sync_request
from ingest.models import SyncRun
from ingest.sources import source_create
from ingest.tasks import sync_source
from tests.celery_worker import CeleryWorker, worker_database_url
from tests.conftest import require_postgres, require_service
from tests.faults.servers import PrivateRedis, github_with_issues, wait_until

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

QUEUE = f"faults-ingest-{uuid.uuid4().hex[:10]}"
ISSUES = 120


@pytest.fixture
def redis_server():
    require_service(PrivateRedis.available(), "redis-server", "install redis-server")
    with PrivateRedis() as server:
        yield server


@pytest.fixture
def github(settings):
    server = github_with_issues("faults", "trainer", ISSUES)
    server.start()
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = server.base_url, ""
    yield server
    server.stop()


def test_a_sync_survives_a_redis_restart_and_stores_each_issue_once(
    redis_server, github, settings, tmp_path
):
    require_postgres()
    settings.INGEST_QUEUE = QUEUE
    worker = CeleryWorker(
        QUEUE,
        {
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": redis_server.url,
            "GITHUB_API_URL": github.base_url,
            "GITHUB_TOKEN": "",
            "INGEST_QUEUE": QUEUE,
            "INGEST_PER_PAGE": "10",
            "INGEST_LEASE_SECONDS": "5",
        },
        tmp_path,
    )
    worker.start()
    try:
        github.delay_seconds = 0.02  # some 5 s of sync: long enough to restart Redis inside it
        run = sync_request(source=source_create(repository="faults/trainer"), enqueue=False)
        with Connection(redis_server.url) as broker:
            sync_source.apply_async(args=[run.source_id, run.pk], queue=QUEUE, connection=broker)
        wait_until(lambda: Issue.objects.count() >= 10, 60, "a committed page")

        redis_server.restart(down_seconds=1)
        stored_at_restart = Issue.objects.count()

        wait_until(
            lambda: SyncRun.objects.get(pk=run.pk).status in ("done", "failed"), 60, "the run"
        )
    except TimeoutError:
        pytest.fail(f"the sync did not finish; worker output:\n{worker.logs()}")
    finally:
        worker.stop()
    finished = SyncRun.objects.get(pk=run.pk)
    assert finished.status == "done", f"{finished.error}\n{worker.logs()}"
    assert stored_at_restart < ISSUES  # the restart came mid-sync
    assert Issue.objects.count() == ISSUES
    assert not Issue.objects.values("repository", "number").annotate(n=Count("id")).filter(n__gt=1)
    assert sorted(Issue.objects.values_list("number", flat=True)) == list(range(1, ISSUES + 1))
