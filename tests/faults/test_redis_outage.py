"""Redis down under the production settings (gunicorn, sessions `cached_db`, throttles and cache
in Redis, Celery's broker in Redis): token API calls, logins and pages keep working from the
database; what needs the broker (an export, a sync) is a 503 that says why, with nothing
written; the log says once that the cache is unavailable; all is as before once Redis is back.
"""

from __future__ import annotations

import json
import time

import pytest
from django.conf import global_settings

from accounts.services import api_token_create
from common.cache import TolerantRedisCache
from exports.models import ExportJob
from ingest.models import SyncRun
from ingest.sources import source_create
from tests.celery_worker import worker_database_url
from tests.conftest import PASSWORD, require_postgres, require_service
from tests.faults.http_client import Browser, api
from tests.faults.servers import PrivateRedis, ProductionWeb, free_port, wait_until


@pytest.fixture
def redis_server():
    require_service(PrivateRedis.available(), "redis-server", "install redis-server")
    with PrivateRedis() as server:
        yield server


@pytest.fixture
def site(redis_server, study, people, settings, tmp_path):
    require_postgres()
    # Passwords the production settings can check (the test settings hash them with MD5).
    settings.PASSWORD_HASHERS = global_settings.PASSWORD_HASHERS
    for name in ("manager", "annotator1"):
        people[name].set_password(PASSWORD)
        people[name].save(update_fields=["password"])
    web = ProductionWeb(
        {
            "DATABASE_URL": worker_database_url(),
            "REDIS_URL": redis_server.url,
            "MEDIA_ROOT": str(tmp_path / "media"),
            "LOG_LEVEL": "INFO",
        },
        tmp_path / "web.log",
    )
    with web:
        yield web


def log_lines(web: ProductionWeb) -> list[dict]:
    return [json.loads(line) for line in web.logs().splitlines() if line.startswith("{")]


@pytest.mark.django_db(transaction=True)
def test_with_redis_down_reads_and_logins_work_and_queuing_is_a_503(
    site, redis_server, study, people
):
    _, key = api_token_create(user=people["manager"], name="outage")
    source = source_create(repository="acme/trainer")
    manager = Browser(site.port)
    assert manager.login("manager").status == 302
    assert api(site.port, "GET", "/api/studies/", key).status == 200

    redis_server.stop()

    # Token API calls: the user throttle cannot count, so the call goes through.
    listed = api(site.port, "GET", "/api/studies/", key)
    assert listed.status == 200, listed.text
    assert [entry["slug"] for entry in listed.json()["results"]] == ["demo"]
    # A session made before the outage is read from the database.
    home = manager.request("GET", "/")
    assert home.status == 200 and "Demo" in home.text
    # A login during the outage works, and so does its session.
    annotator = Browser(site.port)
    signed_in = annotator.login("annotator1")
    assert signed_in.status == 302, signed_in.text[:2000]
    queue = annotator.request("GET", "/studies/demo/queue/")
    assert queue.status == 200 and "annotator1" in queue.text

    # Queuing needs the broker: a 503 with the reason, and nothing recorded as queued.
    export = api(site.port, "POST", "/api/studies/demo/exports/", key, {"format": "jsonl"})
    assert export.status == 503, export.text
    assert export.headers["Retry-After"]
    error = export.json()["error"]
    assert set(error) == {"code", "message", "details"}
    assert error["code"] == "service_unavailable"
    assert "task queue" in error["message"] and "the export was not started" in error["message"]
    sync = api(site.port, "POST", f"/api/sources/{source.pk}/sync/", key)
    assert sync.status == 503 and sync.json()["error"]["code"] == "service_unavailable"
    assert "the sync was not started" in sync.json()["error"]["message"]
    page = manager.request("POST", "/studies/demo/export/", form={"format": "jsonl"})
    assert page.status == 503 and page.headers["Content-Type"].startswith("text/html")
    assert "Task queue unavailable" in page.text and "the export was not started" in page.text
    assert not ExportJob.objects.exists() and not SyncRun.objects.exists()

    # One warning for the cache, one line per refused request, and no 500 at all.
    lines = log_lines(site)
    cache_warnings = [line for line in lines if line["logger"] == "common.cache"]
    assert len(cache_warnings) == 1 and cache_warnings[0]["level"] == "WARNING"
    assert "cache unavailable" in cache_warnings[0]["message"]
    refused = [line for line in lines if "task queue unavailable" in line["message"]]
    assert len(refused) == 3
    requests = [line for line in lines if line["logger"] == "issuecoder.request"]
    assert requests and all(line["status"] < 500 or line["status"] == 503 for line in requests)

    # Redis back (empty): exports are queued again.
    redis_server.start()
    export = api(site.port, "POST", "/api/studies/demo/exports/", key, {"format": "jsonl"})
    assert export.status == 202, export.text
    assert ExportJob.objects.count() == 1


def test_the_cache_answers_misses_while_redis_is_down_and_forgets_what_it_could_not_write(
    redis_server, caplog
):
    import redis

    cache = TolerantRedisCache(redis_server.url, {"OPTIONS": {"retry_seconds": 0.2}})
    cache.set("session", "signed in")
    redis_server.stop()
    time.sleep(0.1)

    with caplog.at_level("INFO", logger="common.cache"):
        assert cache.get("session", "miss") == "miss"
        cache.delete("session")  # a sign-out during the outage
        cache.set("other", 1)
        assert cache.get_many(["session", "other"]) == {}
        assert cache.add("new", 1) is False
        with pytest.raises(ValueError, match="not found"):
            cache.incr("counter")
        # A Redis that comes back with what it held before the outage...
        redis_server.start()
        client = redis.Redis.from_url(redis_server.url)
        client.set(cache.make_key("session"), b"stale")
        wait_until(lambda: cache.get("other", "miss") == "miss" and not cache._outage.down, 5,
                   "the cache to answer again")  # fmt: skip

    # ...no longer serves the value of a key deleted during the outage.
    assert cache.get("session", "miss") == "miss"
    assert client.get(cache.make_key("session")) is None
    cache.set("session", "again")
    assert cache.get("session") == "again"
    warnings = [record for record in caplog.records if record.levelname == "WARNING"]
    assert len(warnings) == 1 and "cache unavailable" in warnings[0].getMessage()
    client.close()


def test_a_port_with_nothing_listening_is_a_miss_within_the_socket_timeout():
    cache = TolerantRedisCache(f"redis://127.0.0.1:{free_port()}/0", {})
    started = time.monotonic()
    assert cache.get("key", "miss") == "miss"
    cache.set("key", "value")
    assert time.monotonic() - started < 2


@pytest.mark.django_db
def test_sync_now_without_a_broker_reloads_the_page_with_the_reason(
    client, people, study, settings
):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    source = source_create(repository="acme/trainer")
    client.force_login(people["manager"])

    # The Sources page's button (htmx): no swap of an error, so the page is loaded again.
    answer = client.post(
        "/sources/", {"action": "sync", "source": source.pk}, headers={"HX-Request": "true"}
    )

    assert answer.status_code == 503 and answer["HX-Refresh"] == "true"
    assert not SyncRun.objects.exists()
    page = client.get("/sources/")
    assert "the sync was not started" in page.content.decode()
    # Without htmx, a page that says so.
    answer = client.post("/sources/", {"action": "sync", "source": source.pk})
    assert answer.status_code == 503 and b"Task queue unavailable" in answer.content
