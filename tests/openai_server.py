"""A stand-in for an OpenAI-compatible chat-completions endpoint, served over real HTTP on
127.0.0.1 for tests and benchmarks, as tests/github_server.py is for GitHub::

    with FakeOpenAI() as endpoint:
        endpoint.fail_next("429", times=2)
        ... annotate with base_url=endpoint.base_url ...
        assert endpoint.request_count == 5

Endpoint: ``POST /v1/chat/completions`` (everything else answers 404 in OpenAI's error shape).

Answers are deterministic and derived from the prompt: the JSON schema of the request's
``response_format`` (or, when the endpoint does not take one, the schema printed in the system
message between ``BEGIN SCHEMA`` and ``END SCHEMA``) names each dimension and its categories; for
each dimension the answer is ``choose(prompt, dimension, categories, multi_label)``, by default
a category picked by a hash of the user message and the dimension. Tests replace
:attr:`FakeOpenAI.choose` to answer as they need (the gold label, a disagreement, ...).

Faults, settable at any time: :meth:`FakeOpenAI.fail_next` queues faults for the next requests
(``"429"`` with Retry-After, ``"500"``, ``"timeout"`` (an answer later than the client waits),
``"malformed"`` (content that is not JSON), ``"schema"`` (JSON that violates the schema),
``"refusal"``, ``"401"``); :attr:`FakeOpenAI.fault_for` decides a fault per request from the user
message (e.g. always refuse one issue). :attr:`latency_seconds` delays every answer;
:attr:`json_schema_supported` False answers 400 to a ``json_schema`` response format, as some
servers do. Every request is logged in :attr:`requests` as ``(body, status, fault)``.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any, Self

FAULTS = ("429", "500", "timeout", "malformed", "schema", "refusal", "401")
SCHEMA_IN_TEXT = re.compile(r"BEGIN SCHEMA\s*(\{.*?\})\s*END SCHEMA", re.DOTALL)

Chooser = Callable[[str, str, list[str], bool], list[str]]


class _StandInHTTPServer(http.server.ThreadingHTTPServer):
    # The default backlog of 5 drops connections when a run opens eight at once on a loaded
    # machine; the client then times out on a request the server never saw.
    request_queue_size = 128


def hashed_choice(
    prompt: str, dimension: str, categories: list[str], multi_label: bool
) -> list[str]:
    """A category picked by a hash of the prompt and the dimension: the same prompt always
    gets the same answer."""
    if not categories:
        return []
    digest = int(hashlib.sha256(f"{dimension}\n{prompt}".encode()).hexdigest(), 16)
    return [categories[digest % len(categories)]]


class FakeOpenAI:
    def __init__(self, *, latency_seconds: float = 0.0, timeout_seconds: float = 3.0) -> None:
        self.latency_seconds = latency_seconds
        # How long a "timeout" fault holds its answer: longer than the client under test waits.
        self.timeout_seconds = timeout_seconds
        self.retry_after_ms = 50
        self.json_schema_supported = True
        # Log-probabilities, when a request asks for them: every token certain but the first
        # token of each category of a dimension, whose probability is `category_probability`'s
        # for that dimension. `logprobs_supported` False answers 400 to a request for them.
        self.logprobs_supported = True
        self.category_probability: Callable[[str], float] = lambda dimension: 1.0
        self.choose: Chooser = hashed_choice
        self.rationale = "{dimension} judged from the issue text"
        self.fault_for: Callable[[str], str | None] | None = None
        self.requests: list[tuple[dict, int, str | None]] = []
        self.last_authorization: str | None = None
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._in_flight = 0
        self.max_in_flight = 0
        self._server = _StandInHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # Lifecycle -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # Control ---------------------------------------------------------------------------------

    def fail_next(self, fault: str, times: int = 1) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; one of {FAULTS}")
        with self._lock:
            self._faults.extend([fault] * times)

    @property
    def request_count(self) -> int:
        return len(self.requests)

    # Answers ---------------------------------------------------------------------------------

    def _next_fault(self, user_message: str) -> str | None:
        with self._lock:
            if self._faults:
                return self._faults.popleft()
        return self.fault_for(user_message) if self.fault_for else None

    def _answer(self, body: dict, fault: str | None) -> tuple[int, dict, dict[str, str]]:
        messages = body.get("messages") or []
        system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
        user = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        response_format = body.get("response_format") or {}
        if fault == "401":
            return 401, _error("Incorrect API key provided.", "invalid_request_error"), {}
        if fault == "429":
            headers = {"Retry-After": "1", "retry-after-ms": str(self.retry_after_ms)}
            return 429, _error("Rate limit reached.", "rate_limit_exceeded"), headers
        if fault == "500":
            return 500, _error("The server had an error.", "server_error"), {}
        if response_format.get("type") == "json_schema" and not self.json_schema_supported:
            return 400, _error("response_format json_schema is not supported", "invalid"), {}
        if body.get("logprobs") and not self.logprobs_supported:
            return 400, _error("logprobs are not supported by this model", "invalid"), {}
        schema = (response_format.get("json_schema") or {}).get("schema")
        if schema is None:
            found = SCHEMA_IN_TEXT.search(system)
            schema = json.loads(found.group(1)) if found else {"properties": {}}
        refusal = None
        tokens = None
        if fault == "refusal":
            content, refusal = None, "I can't help with that request."
        elif fault == "malformed":
            content = '{"screening": {"categories": ["inc'
        else:
            answer = {}
            for key, part in (schema.get("properties") or {}).items():
                items = part["properties"]["categories"]
                choices = list(items["items"].get("enum", []))
                multi_label = items.get("maxItems") != 1
                answer[key] = {
                    "categories": self.choose(user, key, choices, multi_label),
                    "rationale": self.rationale.format(dimension=key),
                }
            if fault == "schema":
                first = next(iter(answer), "dimension")
                answer[first] = {"categories": ["no_such_category"], "rationale": 3}
            content = json.dumps(answer)
            if body.get("logprobs"):
                tokens = self._tokens(answer)
                assert "".join(token["token"] for token in tokens) == content
        prompt_chars = sum(len(m.get("content") or "") for m in messages)
        completion = {
            "id": "chatcmpl-" + hashlib.sha256(json.dumps(body).encode()).hexdigest()[:24],
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", ""),
            "system_fingerprint": "fp_stand_in",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": "stop",
                    "logprobs": None if tokens is None else {"content": tokens},
                }
            ],
            "usage": {
                "prompt_tokens": prompt_chars // 4,
                "completion_tokens": len(content or refusal or "") // 4,
                "total_tokens": prompt_chars // 4 + len(content or refusal or "") // 4,
            },
        }
        return 200, completion, {}

    def _tokens(self, answer: dict) -> list[dict]:
        """The answer's JSON (as json.dumps writes it) cut in tokens with log-probabilities."""
        pieces: list[tuple[str, float]] = [("{", 0.0)]
        for index, (key, part) in enumerate(answer.items()):
            pieces.append((("" if index == 0 else ", ") + json.dumps(key) + ": {", 0.0))
            if isinstance(part, dict) and set(part) == {"categories", "rationale"}:
                pieces.append(('"categories": [', 0.0))
                probability = self.category_probability(key)
                for position, category in enumerate(part["categories"]):
                    separator = "" if position == 0 else ", "
                    pieces.append((separator + json.dumps(category), math.log(probability)))
                pieces.append(('], "rationale": ' + json.dumps(part["rationale"]) + "}", 0.0))
            else:
                pieces.append((json.dumps(part)[1:], 0.0))
        pieces.append(("}", 0.0))
        return [
            {"token": text, "logprob": logprob, "bytes": None, "top_logprobs": []}
            for text, logprob in pieces
        ]

    def _handler_class(self) -> type[http.server.BaseHTTPRequestHandler]:
        stand_in = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, _error(f"Unknown route {self.path}", "invalid_request_error"))
                    return
                try:
                    body = json.loads(raw)
                except ValueError:
                    self._send(400, _error("The body is not JSON.", "invalid_request_error"))
                    return
                stand_in.last_authorization = self.headers.get("Authorization")
                user = next(
                    (m.get("content", "") for m in body.get("messages", []) if m["role"] == "user"),
                    "",
                )
                fault = stand_in._next_fault(user)
                with stand_in._lock:
                    stand_in._in_flight += 1
                    stand_in.max_in_flight = max(stand_in.max_in_flight, stand_in._in_flight)
                try:
                    if stand_in.latency_seconds:
                        time.sleep(stand_in.latency_seconds)
                    if fault == "timeout":
                        time.sleep(stand_in.timeout_seconds)
                    status, answer, headers = stand_in._answer(body, fault)
                finally:
                    with stand_in._lock:
                        stand_in._in_flight -= 1
                        stand_in.requests.append((body, status, fault))
                # The client may have given up waiting (a timeout fault).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(status, answer, headers)

            def do_GET(self) -> None:
                self._send(404, _error(f"Unknown route {self.path}", "invalid_request_error"))

            def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _error(message: str, code: str) -> dict:
    return {"error": {"message": message, "type": code, "param": None, "code": code}}
