"""Running a machine annotator over its study's items.

A run sends the endpoint at most MACHINES_MAX_IN_FLIGHT requests at once from a thread pool;
the threads only speak HTTP, and this thread alone reads and writes the database. Each item's
labels are written in one transaction when all its samples answered validly, so a failure of
one item (a refusal, a malformed answer, an endpoint that keeps failing) never loses a finished
item nor stores half an answer, and a run stopped anywhere resumes where it stopped: items that
already carry labels of this annotator under the same settings are skipped, and every valid
answer is cached (MachineResponse) so that asking again pays nothing.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Prefetch
from django.utils import timezone

from corpus.models import IssueComment
from labeling.models import Study, StudyItem
from labeling.selectors import study_dimensions
from machines import llm
from machines.classical import TooLittleGold, classical_run_execute
from machines.models import MachineAnnotator, MachineLabel, MachineResponse, MachineRun
from machines.prompts import (
    AnswerInvalid,
    CategoryText,
    DimensionText,
    IssueText,
    answer_parse,
    answer_schema,
    categories_probability,
    prompt_template,
    response_format_of,
    samples_consensus,
    sha256_of,
    system_prompt,
    user_prompt,
)
from machines.seats import machine_seat_fill, machine_seats_fill, machine_seats_take
from taxonomy.models import Category, Dimension
from taxonomy.selectors import categories_of_version

logger = logging.getLogger(__name__)

ITEM_CHUNK = 200
MAX_ITEM_ERRORS_KEPT = 50


class RunAborted(Exception):
    """The endpoint refused the run itself (a wrong key, model or URL): no item can succeed."""


@dataclass
class _Request:
    """One item's prompt and what it still needs from the endpoint."""

    item_id: int
    messages: list[dict[str, str]]
    keys: list[str]  # cache key of each sample
    cached: dict[int, dict] = field(default_factory=dict)  # sample -> stored response


@dataclass
class _Outcome:
    item_id: int
    answers: dict[int, dict] = field(default_factory=dict)  # sample -> parsed answer
    responses: dict[int, dict] = field(default_factory=dict)  # sample -> new raw response
    requests: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    error: str = ""
    fatal: bool = False
    models: set[str] = field(default_factory=set)


@dataclass
class _Endpoint:
    """What the threads share: the client, the request's fixed parts and the format in use."""

    client: llm.ChatClient
    model: str
    temperature: float
    seed: int | None
    schema: dict
    use_json_schema: bool = True
    # Log-probabilities are asked for (a confidence better than the samples' agreement) until
    # the endpoint refuses them.
    use_logprobs: bool = True


def _api_key(annotator: MachineAnnotator) -> str | None:
    if not annotator.api_key_env:
        return None
    key = os.environ.get(annotator.api_key_env) or getattr(settings, annotator.api_key_env, None)
    if not key or not isinstance(key, str):
        raise RunAborted(
            f"The environment variable {annotator.api_key_env} that should hold the API key "
            "is not set."
        )
    return key


def _dimension_texts(dimensions: list[Dimension], study: Study) -> list[DimensionText]:
    by_dimension: dict[int, list] = {}
    for category in categories_of_version(version=study.codebook_version):
        if not category.deprecated:
            by_dimension.setdefault(category.dimension_id, []).append(category)
    texts = []
    for dimension in dimensions:
        categories = by_dimension.get(dimension.id, [])
        key_of = {category.id: category.key for category in categories}
        texts.append(
            DimensionText(
                key=dimension.key,
                name=dimension.name,
                description=dimension.description,
                multi_label=dimension.multi_label,
                applies_when=dict(dimension.applies_when or {}),
                categories=[
                    _category_text(category, key_of.get(category.parent_id))
                    for category in categories
                ],
            )
        )
    return texts


def _category_text(category: Category, parent_key: str | None) -> CategoryText:
    return CategoryText(
        key=category.key,
        name=category.name,
        definition=category.definition,
        include=category.include,
        exclude=category.exclude,
        examples=[str(example) for example in category.examples or []],
        parent=parent_key,
    )


def _issue_text(item: StudyItem) -> IssueText:
    issue = item.issue
    fixes = []
    for fix in issue.linked_fixes.all():
        size = ""
        if fix.files_changed is not None:
            size = f": {fix.files_changed} files, +{fix.additions or 0} -{fix.deletions or 0}"
        fixes.append(f"{fix.kind} {fix.ref}{size}")
    return IssueText(
        repository=f"{issue.repository.owner}/{issue.repository.name}",
        number=issue.number,
        state=issue.state,
        labels=[str(label) for label in issue.labels or []],
        title=issue.title,
        body=issue.body,
        comments=[(comment.author, comment.body) for comment in issue.comments.all()],
        linked_fixes=fixes,
    )


def _ask(endpoint: _Endpoint, request: _Request, samples: int) -> _Outcome:
    """Every sample of one item not in the cache, each retried on a rate limit (after its
    Retry-After), a server error or a timeout (exponential backoff with jitter). Runs in a
    pool thread: HTTP only, no database."""
    outcome = _Outcome(item_id=request.item_id)
    for sample in range(samples):
        if sample in request.cached:
            continue
        try:
            completion = _complete_with_retries(endpoint, request, sample, outcome)
        except llm.EndpointError as error:
            outcome.error = error.message
            outcome.fatal = not error.retryable and error.status in (401, 403, 404)
            return outcome
        if completion.refusal or completion.finish_reason == "content_filter":
            outcome.error = f"The model refused: {completion.refusal or 'content filter'}"
            return outcome
        if completion.finish_reason == "length":
            outcome.error = "The answer was cut at the model's length limit."
            return outcome
        try:
            outcome.answers[sample] = answer_parse(completion.content, endpoint.schema)
        except AnswerInvalid as error:
            outcome.error = f"Invalid answer: {error}"
            return outcome
        outcome.responses[sample] = completion.raw
        outcome.models.add(completion.model)
    return outcome


def _complete_with_retries(
    endpoint: _Endpoint, request: _Request, sample: int, outcome: _Outcome
) -> llm.Completion:
    attempts = settings.MACHINES_MAX_ATTEMPTS
    for attempt in range(attempts):
        outcome.requests += 1
        try:
            completion = endpoint.client.complete(
                model=endpoint.model,
                messages=request.messages,
                temperature=endpoint.temperature,
                # Each sample its own seed: the same seed would give the same answer n times.
                seed=None if endpoint.seed is None else endpoint.seed + sample,
                response_format=(
                    response_format_of(endpoint.schema) if endpoint.use_json_schema else None
                ),
                logprobs=endpoint.use_logprobs,
            )
        except llm.LogprobsRefused:
            endpoint.use_logprobs = False
            continue
        except llm.ResponseFormatRefused:
            # The schema is in the system message too; the answer is validated here anyway.
            endpoint.use_json_schema = False
            continue
        except llm.EndpointError as error:
            if not error.retryable or attempt == attempts - 1:
                raise
            wait_seconds = error.retry_after
            if wait_seconds is None:
                wait_seconds = settings.MACHINES_BACKOFF_SECONDS * 2**attempt
                wait_seconds *= random.uniform(0.5, 1.5)
            time.sleep(min(wait_seconds, settings.MACHINES_MAX_WAIT_SECONDS))
            continue
        outcome.tokens_in += completion.tokens_in
        outcome.tokens_out += completion.tokens_out
        return completion
    raise llm.EndpointError("The endpoint kept refusing the response format.", retryable=False)


class LeaseLost(Exception):
    """Another worker took the run over (this one's lease expired unrenewed): stop quietly."""


def _lease_owner() -> str:
    return f"{socket.gethostname()[:60]}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


def _lease_acquire(run_id: int, owner: str) -> MachineRun | None:
    """The run, leased to `owner` and marked running; None when it has ended or another
    worker holds an unexpired lease on it (a second delivery of its task, a double resume)."""
    now = timezone.now()
    with transaction.atomic():
        run = (
            MachineRun.objects.select_for_update(of=("self",))
            .select_related("annotator__study__codebook_version__codebook")
            .get(pk=run_id)
        )
        if run.status in (MachineRun.Status.FINISHED, MachineRun.Status.FAILED):
            return None
        held = run.lease_owner and run.lease_expires_at and run.lease_expires_at > now
        if held and run.lease_owner != owner:
            return None
        run.status = MachineRun.Status.RUNNING
        run.started_at = run.started_at or now
        run.lease_owner = owner
        run.lease_expires_at = now + timedelta(seconds=settings.MACHINES_LEASE_SECONDS)
        run.save(update_fields=["status", "started_at", "lease_owner", "lease_expires_at"])
    return run


def _lease_renew(run: MachineRun, owner: str) -> None:
    """Push the lease's expiry on; LeaseLost when it is no longer this worker's."""
    renewed = MachineRun.objects.filter(pk=run.pk, lease_owner=owner).update(
        lease_expires_at=timezone.now() + timedelta(seconds=settings.MACHINES_LEASE_SECONDS)
    )
    if not renewed:
        raise LeaseLost(f"run {run.pk} was taken over by another worker")


def machine_run_execute(*, run_id: int, owner: str | None = None) -> MachineRun:
    """Run (or resume) a queued run to its end under a lease, so that two workers never run it
    at once: a worker that finds the run leased to another (unexpired) leaves it. Returns the
    run as stored."""
    owner = owner or _lease_owner()
    run = _lease_acquire(run_id, owner)
    if run is None:
        return MachineRun.objects.get(pk=run_id)
    try:
        if run.annotator.kind == MachineAnnotator.Kind.CLASSICAL:
            classical_run_execute(run)
        else:
            _execute(run, owner)
    except LeaseLost:
        logger.warning("machine run %s: lease lost, left to the worker holding it", run.pk)
        return MachineRun.objects.get(pk=run.pk)
    except (RunAborted, TooLittleGold) as error:
        run.refresh_from_db()
        run.status = MachineRun.Status.FAILED
        run.error = str(error)
    except Exception as error:
        logger.exception("machine run %s failed", run.pk)
        run.refresh_from_db()
        run.status = MachineRun.Status.FAILED
        run.error = f"{type(error).__name__}: {error}"
    else:
        run.refresh_from_db()
        run.status = MachineRun.Status.FINISHED
    run.finished_at = timezone.now()
    ended = MachineRun.objects.filter(pk=run.pk, lease_owner=owner).update(
        status=run.status,
        error=run.error,
        finished_at=run.finished_at,
        lease_owner="",
        lease_expires_at=None,
    )
    if not ended:
        logger.warning("machine run %s: lease lost at its end, left to its holder", run.pk)
    return MachineRun.objects.get(pk=run.pk)


def _execute(run: MachineRun, owner: str) -> None:
    annotator = run.annotator
    study = annotator.study
    version = study.codebook_version
    dimensions = study_dimensions(study=study)
    texts = _dimension_texts(dimensions, study)
    schema = answer_schema(texts)
    system = system_prompt(
        codebook=f"{version.codebook.name} {version.label}", dimensions=texts, schema=schema
    )
    template = prompt_template(system)
    budget = settings.MACHINES_ISSUE_CHAR_BUDGET
    host = llm.endpoint_host(annotator.base_url)
    parameters = {
        "model": annotator.model,
        "temperature": annotator.temperature,
        "seed": annotator.seed,
        "samples": annotator.samples,
        "issue_char_budget": budget,
        "max_in_flight": settings.MACHINES_MAX_IN_FLIGHT,
        "response_format": "json_schema",
    }
    run.prompt_template = template
    run.prompt_hash = sha256_of(template)
    run.endpoint_host = host
    run.settings_hash = sha256_of(
        {
            "host": host,
            "base_url": annotator.base_url,
            "prompt_hash": run.prompt_hash,
            **{k: v for k, v in parameters.items() if k != "max_in_flight"},
        }
    )
    run.parameters = parameters
    if annotator.counts_toward_k:  # items added since the machine was chosen get its seat too
        machine_seats_take(annotator=annotator)
    items = StudyItem.objects.filter(study=study)
    # Items labeled by this run before it stopped (it is resumed) are not labeled again, nor
    # counted as skipped: they are among its items done.
    own = set(MachineLabel.objects.filter(run=run).values_list("item_id", flat=True).distinct())
    done_before = set(
        MachineLabel.objects.filter(
            run__annotator=annotator, run__settings_hash=run.settings_hash, item__study=study
        )
        .exclude(run=run)
        .values_list("item_id", flat=True)
        .distinct()
    )
    run.items_total = items.count()
    run.items_skipped = len(done_before - own)
    done_before |= own
    run.save(
        update_fields=[
            "prompt_template",
            "prompt_hash",
            "endpoint_host",
            "settings_hash",
            "parameters",
            "items_total",
            "items_skipped",
        ]
    )

    endpoint = _Endpoint(
        client=llm.ChatClient(
            base_url=annotator.base_url,
            api_key=_api_key(annotator),
            timeout=settings.MACHINES_REQUEST_TIMEOUT,
        ),
        model=annotator.model,
        temperature=annotator.temperature,
        seed=annotator.seed,
        schema=schema,
    )
    dimension_by_key = {dimension.key: dimension for dimension in dimensions}
    models_answering: set[str] = set()
    in_flight = max(1, settings.MACHINES_MAX_IN_FLIGHT)
    aborted = ""
    # Renewed well before it expires, also while every request in flight is still waiting.
    renew_every = max(0.05, settings.MACHINES_LEASE_SECONDS / 3)
    renew_at = time.monotonic() + renew_every
    try:
        with ThreadPoolExecutor(max_workers=in_flight, thread_name_prefix="machine") as pool:
            pending: dict[Future, _Request] = {}
            requests = _requests(run, system, budget, done_before)
            while True:
                while not aborted and len(pending) < 2 * in_flight:
                    request = next(requests, None)
                    if request is None:
                        break
                    if len(request.cached) == annotator.samples:
                        outcome = _Outcome(item_id=request.item_id)
                        _item_store(run, request, outcome, dimension_by_key, schema)
                        continue
                    future = pool.submit(_ask, endpoint, request, annotator.samples)
                    pending[future] = request
                if not pending:
                    break
                if time.monotonic() >= renew_at:
                    _lease_renew(run, owner)
                    renew_at = time.monotonic() + renew_every
                finished, _ = wait(pending, timeout=renew_every, return_when=FIRST_COMPLETED)
                for future in finished:
                    request = pending.pop(future)
                    outcome = future.result()
                    models_answering |= outcome.models
                    _item_store(run, request, outcome, dimension_by_key, schema)
                    if outcome.fatal and not aborted:
                        aborted = outcome.error
    finally:
        endpoint.client.close()
    parameters["response_format"] = "json_schema" if endpoint.use_json_schema else "none"
    parameters["logprobs"] = endpoint.use_logprobs
    parameters["models_answering"] = sorted(models_answering)
    MachineRun.objects.filter(pk=run.pk).update(parameters=parameters)
    if annotator.counts_toward_k:  # the seats of items skipped as labeled before
        machine_seats_fill(annotator=annotator)
    if aborted:
        raise RunAborted(f"The endpoint refused the run: {aborted}")


def _requests(
    run: MachineRun, system: str, budget: int, done_before: set[int]
) -> Iterator[_Request]:
    """The prompt of every item still to label, in chunks read with their issue, comments and
    fixes, each with its cached answers."""
    annotator = run.annotator
    ids = list(
        StudyItem.objects.filter(study=annotator.study).order_by("id").values_list("id", flat=True)
    )
    todo = [item_id for item_id in ids if item_id not in done_before]
    for start in range(0, len(todo), ITEM_CHUNK):
        chunk = (
            StudyItem.objects.filter(id__in=todo[start : start + ITEM_CHUNK])
            .select_related("issue__repository")
            .prefetch_related(
                Prefetch("issue__comments", IssueComment.objects.order_by("created_at", "id")),
                "issue__linked_fixes",
            )
            .order_by("id")
        )
        requests = []
        for item in chunk:
            messages = [
                {"role": "system", "content": system},
                {"role": "user", "content": user_prompt(_issue_text(item), budget=budget)},
            ]
            keys = [_cache_key(run, messages, sample) for sample in range(annotator.samples)]
            requests.append(_Request(item_id=item.id, messages=messages, keys=keys))
        stored = dict(
            MachineResponse.objects.filter(
                key__in=[key for request in requests for key in request.keys]
            ).values_list("key", "response")
        )
        for request in requests:
            request.cached = {
                sample: stored[key] for sample, key in enumerate(request.keys) if key in stored
            }
            yield request


def _cache_key(run: MachineRun, messages: list[dict[str, str]], sample: int) -> str:
    return sha256_of(
        {
            "prompt": sha256_of(messages),
            "model": run.annotator.model,
            "parameters": _cache_parameters(run, sample),
        }
    )


def _cache_parameters(run: MachineRun, sample: int) -> dict:
    annotator = run.annotator
    return {
        "host": run.endpoint_host,
        "temperature": annotator.temperature,
        "seed": annotator.seed,
        "sample": sample,
    }


def _item_store(
    run: MachineRun,
    request: _Request,
    outcome: _Outcome,
    dimension_by_key: dict[str, Dimension],
    schema: dict,
) -> None:
    """Write one item's outcome in one transaction: the new valid responses to the cache and,
    when every sample answered validly, the labels; the run's counters either way."""
    answers = dict(outcome.answers)
    raw_of = {**request.cached, **outcome.responses}
    for sample, response in request.cached.items():
        try:
            content = response["choices"][0]["message"]["content"]
            answers[sample] = answer_parse(content, schema)
        except (AnswerInvalid, KeyError, IndexError, TypeError):
            outcome.error = outcome.error or "A cached answer no longer matches the schema."
    complete = not outcome.error and len(answers) == run.annotator.samples
    with transaction.atomic():
        MachineResponse.objects.bulk_create(
            [
                MachineResponse(
                    key=request.keys[sample],
                    prompt_hash=run.prompt_hash,
                    model=run.annotator.model,
                    parameters=_cache_parameters(run, sample),
                    response=response,
                    tokens_in=(response.get("usage") or {}).get("prompt_tokens") or 0,
                    tokens_out=(response.get("usage") or {}).get("completion_tokens") or 0,
                )
                for sample, response in outcome.responses.items()
            ],
            ignore_conflicts=True,
        )
        if complete:
            samples = sorted(answers)
            ordered = [answers[sample] for sample in samples]
            consensus = {
                key: samples_consensus(
                    ordered,
                    key,
                    [categories_probability(raw_of.get(sample) or {}, key) for sample in samples],
                )
                for key in dimension_by_key
            }
            chosen = {key: c.categories for key, c in consensus.items()}
            MachineLabel.objects.bulk_create(
                [
                    MachineLabel(
                        run=run,
                        item_id=request.item_id,
                        dimension=dimension,
                        categories=consensus[key].categories,
                        confidence=consensus[key].confidence,
                        rationale=consensus[key].rationale,
                        raw_response={
                            "samples": consensus[key].samples,
                            "responses": request.keys,
                            "confidence_from": consensus[key].confidence_from,
                        },
                    )
                    for key, dimension in dimension_by_key.items()
                    if dimension.applies_given(chosen)
                ]
            )
        counters = {
            "requests": F("requests") + outcome.requests,
            "cache_hits": F("cache_hits") + len(request.cached),
            "tokens_in": F("tokens_in") + outcome.tokens_in,
            "tokens_out": F("tokens_out") + outcome.tokens_out,
        }
        if complete:
            counters["items_done"] = F("items_done") + 1
        else:
            counters["items_failed"] = F("items_failed") + 1
        MachineRun.objects.filter(pk=run.pk).update(**counters)
        if not complete:
            _item_error_note(run.pk, request.item_id, outcome.error or "incomplete answer")
    if complete and run.annotator.counts_toward_k:
        machine_seat_fill(annotator=run.annotator, item_id=request.item_id)


def _item_error_note(run_id: int, item_id: int, error: str) -> None:
    run = MachineRun.objects.select_for_update().only("item_errors").get(pk=run_id)
    if len(run.item_errors) < MAX_ITEM_ERRORS_KEPT:
        run.item_errors = [*run.item_errors, {"item": item_id, "error": error[:500]}]
        run.save(update_fields=["item_errors"])
