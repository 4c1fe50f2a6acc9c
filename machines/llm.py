"""The client of OpenAI-compatible chat-completions endpoints (OpenAI, Azure, vLLM, Ollama and
gateways that speak the same API): the only importer of the `openai` package. It makes ONE
request per call and returns plain data; retries, backoff and counting are the caller's
(`machines.runs`), which has to count every request a run makes.
"""

from __future__ import annotations

import email.utils
import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import openai

# The HTTP library logs every request at INFO: a run of 10,000 items would bury the log. The run
# records its requests itself.
logging.getLogger("httpx2").setLevel(logging.WARNING)

# Placeholder key for endpoints that take none (a local vLLM or Ollama): the client refuses to
# start without one.
NO_KEY = "no-key"


@dataclass(frozen=True)
class Completion:
    """One answer of the endpoint, as plain data."""

    content: str | None
    refusal: str | None
    finish_reason: str | None
    tokens_in: int
    tokens_out: int
    model: str  # as the endpoint names it (may carry a dated version)
    raw: dict  # the whole response body, for the record


class EndpointError(Exception):
    """The endpoint did not answer the request. `retryable`: a rate limit, a server error, a
    timeout or a lost connection, worth sending again after `retry_after` seconds (when the
    endpoint said) or a backoff; anything else (a wrong key or model, a refused request) is
    not."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class ResponseFormatRefused(EndpointError):
    """The endpoint refused the `json_schema` response format (400 naming it)."""


class LogprobsRefused(EndpointError):
    """The endpoint refused to give log-probabilities (400 naming them)."""


def endpoint_host(base_url: str) -> str:
    """The host (and port) of an endpoint, recorded with each run; never its path or key."""
    return urlsplit(base_url).netloc.rpartition("@")[2]


class ChatClient:
    """One endpoint. Safe to share between threads (the underlying HTTP pool is)."""

    def __init__(self, *, base_url: str, api_key: str | None, timeout: float) -> None:
        # Imported here: the package takes 0.6 s to import, which every start of the server
        # (the URLconf reaches this module) would otherwise pay without making a request.
        import openai

        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or NO_KEY, timeout=timeout, max_retries=0
        )

    def close(self) -> None:
        self._client.close()

    def complete(
        self,
        *,
        model: str,
        messages: list[dict[str, str]],
        temperature: float | None,
        seed: int | None,
        response_format: dict | None,
        logprobs: bool = False,
    ) -> Completion:
        """One chat completion, with the log-probabilities of its tokens when `logprobs` (in
        the raw response). Raises EndpointError (ResponseFormatRefused, LogprobsRefused for a
        400 that names the response format or the log-probabilities)."""
        import openai  # see __init__

        options: dict = {}
        if logprobs:
            options["logprobs"] = True
        if temperature is not None:
            options["temperature"] = temperature
        if seed is not None:
            options["seed"] = seed
        if response_format is not None:
            options["response_format"] = response_format
        try:
            response = self._client.chat.completions.create(
                model=model, messages=messages, **options
            )
        except openai.APIStatusError as error:
            raise _status_error(error) from None
        except openai.APITimeoutError:
            raise EndpointError("The endpoint did not answer in time.", retryable=True) from None
        except openai.APIConnectionError as error:
            raise EndpointError(f"Could not reach the endpoint: {error}", retryable=True) from None
        except openai.APIError as error:
            # An answer the client could not read (not JSON, not a completion).
            raise EndpointError(f"Unreadable answer: {error.message}", retryable=True) from None
        if not response.choices:
            raise EndpointError("The endpoint answered without a choice.", retryable=True)
        choice = response.choices[0]
        usage = response.usage
        return Completion(
            content=choice.message.content,
            refusal=getattr(choice.message, "refusal", None),
            finish_reason=choice.finish_reason,
            tokens_in=usage.prompt_tokens if usage else 0,
            tokens_out=usage.completion_tokens if usage else 0,
            model=response.model or model,
            raw=response.model_dump(mode="json", exclude_unset=True),
        )


def _status_error(error: openai.APIStatusError) -> EndpointError:
    status = error.status_code
    message = f"{status}: {error.message}"
    if status == 400 and "response_format" in error.message:
        return ResponseFormatRefused(message, status=status)
    if status == 400 and "logprobs" in error.message:
        return LogprobsRefused(message, status=status)
    retryable = status in (408, 409, 429) or status >= 500
    return EndpointError(
        message,
        status=status,
        retryable=retryable,
        retry_after=_retry_after(error.response.headers) if retryable else None,
    )


def _retry_after(headers) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI's) or `Retry-After` (seconds or an HTTP
    date); None when neither says."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, moment.timestamp() - time.time())
