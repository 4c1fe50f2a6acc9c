"""One JSON log line per request (issuecoder.request), as production writes it."""

import io
import json
import logging

import pytest
from django.utils.module_loading import import_string

from common.log import RequestIdFilter, logging_config, request_id


def production_formatter() -> logging.Formatter:
    """The JSON formatter of LOG_FORMAT=json, built from the same configuration."""
    spec = dict(logging_config("json")["formatters"]["json"])
    return import_string(spec.pop("()"))(**spec)


@pytest.fixture
def log_lines():
    """The issuecoder.request lines written while a test runs, parsed."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(production_formatter())
    handler.addFilter(RequestIdFilter())
    logger = logging.getLogger("issuecoder.request")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    logger.removeHandler(handler)
    logger.setLevel(level)


def test_a_request_is_one_json_line_with_its_fields(client, make_user, log_lines):
    user = make_user("reader")
    client.force_login(user)

    response = client.get("/", HTTP_X_REQUEST_ID="proxy-id-42")

    assert response.status_code == 200
    [line] = log_lines()
    assert line["level"] == "INFO" and line["logger"] == "issuecoder.request"
    assert line["message"].startswith("GET / 200 ")
    assert (line["method"], line["path"], line["status"]) == ("GET", "/", 200)
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["user_id"] == user.pk
    assert line["request_id"] == "proxy-id-42" == response["X-Request-ID"]
    assert line["time"].endswith("+00:00")  # ISO 8601, UTC


def test_without_a_usable_request_id_one_is_made_and_echoed(client, db, log_lines):
    response = client.get("/accounts/login/", HTTP_X_REQUEST_ID="bad id\nforged: line")

    [line] = log_lines()
    assert response["X-Request-ID"] == line["request_id"]
    assert len(line["request_id"]) == 32 and "\n" not in line["request_id"]
    assert line["user_id"] is None


def test_client_errors_are_warnings(client, db, log_lines):
    client.get("/no-such-page/")

    [line] = log_lines()
    assert (line["level"], line["status"]) == ("WARNING", 404)


def test_static_files_are_not_logged(client, db, log_lines):
    assert client.get("/static/web/app.css").status_code == 200
    assert log_lines() == []


def test_records_logged_during_a_request_carry_its_id():
    token = request_id.set("abc123")
    try:
        record = logging.LogRecord("x", logging.INFO, __file__, 1, "inside", None, None)
        RequestIdFilter().filter(record)
    finally:
        request_id.reset(token)
    assert record.request_id == "abc123"


def test_text_and_json_are_the_formats():
    assert logging_config("text")["handlers"]["console"]["formatter"] == "text"
    with pytest.raises(ValueError, match="LOG_FORMAT must be one of json, text"):
        logging_config("xml")
