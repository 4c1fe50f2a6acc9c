"""Writes to the corpus: issues, comments and linked fixes, from import files or from GitHub."""

import logging
import multiprocessing
import os
import threading
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from django.db import DatabaseError, connection, models, transaction
from django.db.models import ProtectedError
from django.utils import timezone

from common.bulk import bulk_upsert, collector_paused
from common.exceptions import ApplicationError
from common.services import model_update
from corpus.facets import issue_facets
from corpus.models import Issue, IssueComment, LinkedFix, Repository, RepositoryAlias
from corpus.records import CommentRecord, IssueRecord, RecordError, issue_record_parse
from corpus.rendering import RenderedThread, issue_threads_render, render_markdown
from corpus.selectors import repository_by_name
from corpus.signals import issues_changed_upstream

logger = logging.getLogger(__name__)

BATCH_SIZE = 500
# Processes rendering Markdown and extracting facets while the importing one reads and stores:
# the machine's cores, up to the point where storing, which only that process does, keeps up.
MAX_IMPORT_WORKERS = 4
ISSUE_FIELDS = [
    "github_id", "is_pull_request", "title", "body", "body_html", "state", "state_reason",
    "author", "labels", "created_at", "updated_at", "closed_at", "comments_count", "raw",
]  # fmt: skip


class RepositoryConflict(ApplicationError):
    """What is known of a repository contradicts itself (a name and an id that belong to two
    repositories), or two rows of one repository cannot be made one without dropping an issue
    that other rows use. The records naming it are refused; nothing is changed."""


@dataclass
class IssueImportReport:
    read: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    merged_duplicates: int = 0
    pull_requests: int = 0
    comments: int = 0
    linked_fixes: int = 0
    errors: list[tuple[int, str]] = field(default_factory=list)
    changed_issue_ids: list[int] = field(default_factory=list)
    # Issues created or updated (not the unchanged ones), for follow-up work.
    written_issue_ids: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.read} records read: {self.created} issues created, {self.updated} updated, "
            f"{self.unchanged} unchanged ({self.pull_requests} pull requests among them, "
            f"{self.merged_duplicates} duplicates merged); {self.comments} comments and "
            f"{self.linked_fixes} linked fixes stored; {len(self.errors)} lines with errors"
        )

    def add_stored(self, other: "IssueImportReport") -> None:
        """Add what `other` stored (not what it read) and the lines it refused to this report."""
        for name in ("created", "updated", "unchanged", "pull_requests", "comments"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.linked_fixes += other.linked_fixes
        self.changed_issue_ids.extend(other.changed_issue_ids)
        self.written_issue_ids.extend(other.written_issue_ids)
        self.errors.extend(other.errors)


@dataclass
class RepositoryRows:
    """The rows of the repositories that an import has met, by (owner, name), so that each is
    looked up once (`issues_store`'s `repositories`)."""

    ids: dict[tuple[str, str], int] = field(default_factory=dict)
    # The names met with GitHub's id of their repository. A name met without it is looked up
    # again when a record gives it: the id decides which row the name is (`_repository_for_record`).
    identified: set[tuple[str, str]] = field(default_factory=set)

    def copy(self) -> "RepositoryRows":
        return RepositoryRows(dict(self.ids), set(self.identified))

    def forget(self) -> None:
        self.ids.clear()
        self.identified.clear()


def import_workers() -> int:
    """How many processes should render an import (`issues_import`'s `workers`): the cores this
    process may use, up to MAX_IMPORT_WORKERS; one (this process alone) where it may not start
    processes of its own, a daemonic process's (multiprocessing refuses them children)."""
    if multiprocessing.current_process().daemon:
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return min(cores or 1, MAX_IMPORT_WORKERS)


def _pool_context() -> multiprocessing.context.BaseContext:
    """How the rendering processes start. A fork starts one at once, but copies the whole
    process: in one with other threads (a web server's, where the embedded default runs an
    upload's import) a lock that another thread holds would stay held in the copy forever.
    There they fork from a fork server, a process of one thread, instead."""
    if threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    context = multiprocessing.get_context("forkserver")
    # The server imports the renderer only, not the program's main module (its default), which
    # may be a script that is not safe to import again.
    context.set_forkserver_preload(["corpus.rendering"])
    return context


@collector_paused()
def issues_import(
    *,
    objects: Iterable[tuple[int, Any]],
    render: bool = True,
    on_batch: Callable[[IssueImportReport, list[IssueRecord]], None] | None = None,
    workers: int = 1,
) -> IssueImportReport:
    """Upsert the issues of an import file (with comments and linked fixes) by repository and
    number, through `issues_store` a batch at a time.

    `objects` are (line number, decoded object or RecordError) pairs, as `issue_file_lines` yields
    them. Bad lines are reported with their number and skipped; good lines are stored in batches,
    each in its own transaction, so that what was stored before stays stored. An issue whose
    `updated_at` is not newer than the stored one is left alone, which makes a second run a no-op.

    The same issue on two lines is merged, the newer copy winning (`_merge`). A comment id found
    under two different issues stays with the later line's issue, as a later import would move
    it: comment ids are unique across GitHub, and PostgreSQL refuses one upsert that writes a
    row twice. `on_batch`, when given, hears of each stored batch with the report so far
    (progress) and the batch's records.

    With `render`, the texts of the issues that a batch adds to the corpus (most of an import)
    are rendered, with their facets, before the batch is stored and are stored with it: reading
    them back and writing them again took longer than rendering them. With `workers` above 1,
    that many processes render while this one reads and stores. The texts of issues stored
    before, whose threads in the corpus may hold comments the file lacks, are rendered from the
    corpus at the end (`issue_texts_render`), as are those of an issue that lost comments to an
    issue of the file. Without `render`, all texts wait for `issue_texts_render`.
    """
    report = IssueImportReport()
    # Each repository is looked up once for the whole file rather than once a batch.
    repositories = RepositoryRows()
    if not render:
        for batch in _batches(objects, report):
            report.add_stored(issues_store(records=batch, render=False, repositories=repositories))
            if on_batch is not None:
                on_batch(report, [record for _, record in batch])
        report.errors.sort()
        return report
    pool: ProcessPoolExecutor | None = None
    try:
        # A batch more than there are workers is rendered ahead, so that none waits while this
        # process stores the oldest.
        ahead: deque[_RenderingBatch] = deque()
        for batch in _batches(objects, report):
            if pool is None and workers > 1 and len(batch) >= BATCH_SIZE:
                # Not for a file of less than one batch, which renders faster than processes
                # start.
                pool = ProcessPoolExecutor(max_workers=workers, mp_context=_pool_context())
            ahead.append(_RenderingBatch.start(batch, pool, repositories))
            if len(ahead) > (workers if pool is not None else 0):
                ahead.popleft().store(report=report, on_batch=on_batch)
        while ahead:
            ahead.popleft().store(report=report, on_batch=on_batch)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    report.errors.sort()
    issue_texts_render(issue_ids=None)
    return report


@dataclass
class _RenderingBatch:
    """A batch of `issues_import` whose new issues' threads are being rendered."""

    batch: list[tuple[int, IssueRecord]]
    keys: list[tuple[str, str, int]]
    rendered: Callable[[], list[RenderedThread]]
    repositories: RepositoryRows

    @classmethod
    def start(
        cls,
        batch: list[tuple[int, IssueRecord]],
        pool: ProcessPoolExecutor | None,
        repositories: RepositoryRows,
    ) -> "_RenderingBatch":
        new = _issues_new([record for _, record in batch], repositories)
        threads = [
            (record.title, record.body, [comment.body for comment in _thread(record)])
            for record in new
        ]
        if pool is None:
            rendered = partial(issue_threads_render, threads)
        else:
            rendered = pool.submit(issue_threads_render, threads).result
        return cls(batch, [_issue_key(record) for record in new], rendered, repositories)

    def store(
        self,
        *,
        report: IssueImportReport,
        on_batch: Callable[[IssueImportReport, list[IssueRecord]], None] | None,
    ) -> None:
        threads = dict(zip(self.keys, self.rendered(), strict=True))
        report.add_stored(
            issues_store(
                records=self.batch,
                render=False,
                rendered=threads,
                repositories=self.repositories,
            )
        )
        if on_batch is not None:
            on_batch(report, [record for _, record in self.batch])


def _issues_new(records: list[IssueRecord], repositories: RepositoryRows) -> list[IssueRecord]:
    """The records whose issues the corpus does not hold, as far as reading it now tells: the
    store decides again in its transaction, and a wrong guess costs only a render.
    `repositories` are the rows that earlier batches looked up."""
    by_repository: dict[tuple[str, str], list[IssueRecord]] = defaultdict(list)
    for record in records:
        by_repository[record.repository_key].append(record)
    new: list[IssueRecord] = []
    for (owner, name), group in by_repository.items():
        repository_id = repositories.ids.get((owner, name))
        if repository_id is None:
            repository = repository_by_name(owner=owner, name=name)
            repository_id = None if repository is None else repository.id
        stored = set()
        if repository_id is not None:
            numbers = [record.number for record in group]
            stored = {
                number
                for (number,) in _integers_where(
                    Issue, ["number"], repository_id=[repository_id], number=numbers
                )
            }
        new.extend(record for record in group if record.number not in stored)
    return new


def _issue_key(record: IssueRecord) -> tuple[str, str, int]:
    return (record.owner, record.name, record.number)


def _thread(record: IssueRecord) -> list[CommentRecord]:
    """The record's comments in the order of a stored thread (IssueComment's ordering), the
    order in which facets read them."""
    return sorted(record.comments, key=lambda comment: (comment.created_at, comment.github_id))


def issues_store(
    *,
    records: Sequence[IssueRecord] | Sequence[tuple[int, IssueRecord]],
    replace_threads: bool = False,
    render: bool = True,
    rendered: Mapping[tuple[str, str, int], RenderedThread] | None = None,
    repositories: RepositoryRows | None = None,
) -> IssueImportReport:
    """The one way issues enter the corpus: upsert a batch of records (distinct issues) with
    their comments and linked fixes, in one transaction, then render their Markdown and facets
    once that transaction commits (inside a caller's transaction, when the caller's commits).

    Records may come as (place, record) pairs, a place being what an error names (a file's
    line number); plain records are named by their issue number. Should the database refuse the
    batch (the parser mirrors the columns' limits, so it should not), its issues are stored one
    by one and only the refused ones are reported in `errors`. With `replace_threads`, each
    written issue's comments and linked fixes become exactly those of its record (comments
    deleted upstream go); an import file, whose threads may be excerpts, only adds. Stored
    issues that changed are announced with `corpus.signals.issues_changed_upstream`.

    `rendered` holds threads rendered ahead (`corpus.rendering.issue_thread_render` of the title,
    body and comments in thread order) by (owner, name, number): an issue that the batch adds to
    the corpus is stored rendered with them, and an issue that loses comments to it is marked
    for rendering again. Issues stored before are rendered from the corpus, as without it.

    `repositories` carries the repositories' rows from one call to the next of the same import,
    which then looks each repository up once: the batch's are added.
    """
    placed = [entry if isinstance(entry, tuple) else (entry.number, entry) for entry in records]
    report = IssueImportReport(read=len(placed))
    _store_lines(
        placed,
        RepositoryRows() if repositories is None else repositories,
        report,
        replace_threads=replace_threads,
        rendered=rendered,
    )
    if render and report.written_issue_ids:
        written = list(report.written_issue_ids)
        transaction.on_commit(lambda: issue_texts_render(issue_ids=written))
    return report


def _batches(
    objects: Iterable[tuple[int, Any]], report: IssueImportReport
) -> Iterator[list[tuple[int, IssueRecord]]]:
    """(line number, record) pairs in batches of distinct issues; bad lines go to the report."""
    batch: dict[tuple[str, str, int], tuple[int, IssueRecord]] = {}
    comment_issues: dict[int, tuple[str, str, int]] = {}
    for line_number, obj in objects:
        report.read += 1
        if isinstance(obj, RecordError):
            report.errors.append((line_number, str(obj)))
            continue
        try:
            record = issue_record_parse(obj)
        except RecordError as error:
            report.errors.append((line_number, str(error)))
            continue
        key = (record.owner, record.name, record.number)
        if key in batch:
            report.merged_duplicates += 1
            earlier_line, earlier = batch[key]
            merged = _merge(earlier, record)
            batch[key] = (line_number if merged is record else earlier_line, merged)
        else:
            batch[key] = (line_number, record)
        for comment in record.comments:
            holder = comment_issues.get(comment.github_id)
            if holder is not None and holder != key:
                held = batch[holder][1]
                held.comments = [c for c in held.comments if c.github_id != comment.github_id]
            comment_issues[comment.github_id] = key
        if len(batch) >= BATCH_SIZE:
            yield list(batch.values())
            batch = {}
            comment_issues = {}
    if batch:
        yield list(batch.values())


def _store_lines(
    batch: list[tuple[int, IssueRecord]],
    repositories: RepositoryRows,
    report: IssueImportReport,
    *,
    replace_threads: bool,
    rendered: Mapping[tuple[str, str, int], RenderedThread] | None,
) -> None:
    """Store a batch in one transaction or, if the database refuses it, each issue in its own,
    reporting the refused ones with their line."""
    try:
        _store_committed(
            [record for _, record in batch],
            repositories,
            report,
            replace_threads=replace_threads,
            rendered=rendered,
        )
        return
    except (DatabaseError, ValueError, TypeError, OverflowError, RepositoryConflict) as error:
        # ValueError and friends: values the database adapters refuse before sending them.
        logger.warning(
            "a batch of %d issues was refused (%s); storing one by one", len(batch), error
        )
        # Perhaps for a repository whose row is gone since it was looked up (merged by a sync
        # meanwhile): each is looked up again.
        repositories.forget()
    for line_number, record in batch:
        try:
            _store_committed(
                [record], repositories, report, replace_threads=replace_threads, rendered=rendered
            )
        except RepositoryConflict as error:
            report.errors.append((line_number, error.message))
        except (DatabaseError, ValueError, TypeError, OverflowError) as error:
            message = str(error).strip().splitlines()[0] if str(error).strip() else repr(error)
            report.errors.append((line_number, f"the database refused this issue: {message}"))


def _store_committed(
    records: list[IssueRecord],
    repositories: RepositoryRows,
    report: IssueImportReport,
    *,
    replace_threads: bool,
    rendered: Mapping[tuple[str, str, int], RenderedThread] | None,
) -> None:
    """`_store_batch`, counting and caching repository ids only once its transaction is over: a
    rolled-back batch must not leave the ids of repositories it created (and undid) behind."""
    stored = IssueImportReport()
    known = repositories.copy()
    _store_batch(records, known, stored, replace_threads=replace_threads, rendered=rendered)
    repositories.ids, repositories.identified = known.ids, known.identified
    report.add_stored(stored)


def _merge(first: IssueRecord, second: IssueRecord) -> IssueRecord:
    """The newer copy of an issue wins; comments and fixes of both are kept."""
    newer, older = (second, first) if second.updated_at >= first.updated_at else (first, second)
    comments = {c.github_id: c for c in older.comments}
    comments.update({c.github_id: c for c in newer.comments})
    fixes = {(f.kind, f.ref): f for f in older.linked_fixes}
    fixes.update({(f.kind, f.ref): f for f in newer.linked_fixes})
    newer.comments = list(comments.values())
    newer.linked_fixes = list(fixes.values())
    return newer


def _repository_ids(
    records: list[IssueRecord], known: RepositoryRows
) -> dict[tuple[str, str], int]:
    """(owner, name) of the records -> the id of their repository's row (`repository_for_record`);
    `known` keeps them across batches."""
    github_ids: dict[tuple[str, str], int | None] = {}
    for record in records:
        key = record.repository_key
        if key in known.ids and (record.repository_github_id is None or key in known.identified):
            continue
        if github_ids.get(key) is None:
            github_ids[key] = record.repository_github_id
    for (owner, name), github_id in github_ids.items():
        repository, merged_away = _repository_for_record(
            owner=owner, name=name, github_id=github_id
        )
        for key, repository_id in list(known.ids.items()):
            if repository_id == merged_away:
                known.ids[key] = repository.id
        known.ids[(owner, name)] = repository.id
        if github_id is not None:
            known.identified.add((owner, name))
    return known.ids


@transaction.atomic
def _store_batch(
    records: list[IssueRecord],
    repositories: RepositoryRows,
    report: IssueImportReport,
    *,
    replace_threads: bool = False,
    rendered: Mapping[tuple[str, str, int], RenderedThread] | None = None,
) -> None:
    if connection.vendor == "postgresql":
        # A lost batch after a crash is re-imported by running the import again (it is
        # idempotent), so the import need not wait for each commit to reach the disk.
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
    repository_ids = _repository_ids(records, repositories)
    stored = _stored_issues(records, repository_ids)
    now = timezone.now()
    rows: list[dict[str, Any]] = []
    written: list[IssueRecord] = []
    changed_ids: list[int] = []
    # The HTML of the comments of the issues stored rendered, by comment id.
    comments_html: dict[int, str] = {}
    for record in records:
        key = (repository_ids[record.repository_key], record.number)
        existing = stored.get(key)
        if existing is not None and record.updated_at <= existing[1]:
            report.unchanged += 1
            continue
        thread = None
        if existing is None:
            report.created += 1
            if rendered is not None:
                thread = rendered.get(_issue_key(record))
        else:
            changed_ids.append(existing[0])
        if thread is not None:
            comments_html.update(
                zip(
                    [comment.github_id for comment in _thread(record)],
                    thread.comments_html,
                    strict=True,
                )
            )
        report.pull_requests += record.is_pull_request
        written.append(record)
        rows.append(
            {
                "repository_id": key[0],
                "number": record.number,
                **{name: getattr(record, name) for name in ISSUE_FIELDS if name != "body_html"},
                # Empty: rendered after the batch is stored (`issue_texts_render`).
                "body_html": "" if thread is None else thread.body_html,
                "facets": {} if thread is None else thread.facets,
                "stored_at": now,
            }
        )
    if not rows:
        return
    if changed_ids:
        # Before the write, so that a receiver can keep what the issues were.
        issues_changed_upstream.send(sender=Issue, issue_ids=changed_ids, gone=False)
    bulk_upsert(Issue, rows, unique_fields=["repository_id", "number"])
    report.updated += len(changed_ids)
    if changed_ids:
        report.changed_issue_ids.extend(changed_ids)

    written_keys = {(repository_ids[record.repository_key], record.number) for record in written}
    issue_ids = {
        (repository_id, number): issue_id
        for issue_id, repository_id, number in _integers_where(
            Issue,
            ["id", "repository_id", "number"],
            repository_id=list({key[0] for key in written_keys}),
            number=list({key[1] for key in written_keys}),
        )
        if (repository_id, number) in written_keys
    }
    report.written_issue_ids.extend(issue_ids.values())
    comment_rows = [
        {
            "issue_id": issue_ids[(repository_ids[record.repository_key], record.number)],
            "github_id": comment.github_id,
            "author": comment.author,
            "body": comment.body,
            "body_html": comments_html.get(comment.github_id, ""),
            "created_at": comment.created_at,
            "updated_at": comment.updated_at,
        }
        for record in written
        for comment in record.comments
    ]
    # An issue that loses comments to one stored rendered is rendered again, as it would be
    # had all been rendered after storing (a transferred issue's comments keep their ids).
    losing = _comments_holders(comment_rows) if rendered is not None else set()
    bulk_upsert(IssueComment, comment_rows, unique_fields=["github_id"])
    if losing:
        Issue.objects.filter(id__in=losing).update(body_html="")
    fix_rows = [
        {
            "issue_id": issue_ids[(repository_ids[record.repository_key], record.number)],
            "kind": fix.kind,
            "ref": fix.ref,
            "url": fix.url,
            "merged_at": fix.merged_at,
            "files_changed": fix.files_changed,
            "additions": fix.additions,
            "deletions": fix.deletions,
            "evidence": fix.evidence,
        }
        for record in written
        for fix in record.linked_fixes
    ]
    bulk_upsert(LinkedFix, fix_rows, unique_fields=["issue_id", "kind", "ref"])
    if replace_threads:
        kept_comments = {row["github_id"] for row in comment_rows}
        kept_fixes = {(row["issue_id"], row["kind"], row["ref"]) for row in fix_rows}
        IssueComment.objects.filter(issue_id__in=issue_ids.values()).exclude(
            github_id__in=kept_comments
        ).delete()
        for fix_id, issue_id, kind, ref in LinkedFix.objects.filter(
            issue_id__in=issue_ids.values()
        ).values_list("id", "issue_id", "kind", "ref"):
            if (issue_id, kind, ref) not in kept_fixes:
                LinkedFix.objects.filter(id=fix_id).delete()
    report.comments += len(comment_rows)
    report.linked_fixes += len(fix_rows)


def _comments_holders(comment_rows: list[dict[str, Any]]) -> set[int]:
    """The issues that hold any of these comments now, other than the ones the rows give."""
    issue_of = {row["github_id"]: row["issue_id"] for row in comment_rows}
    return {
        issue_id
        for github_id, issue_id in _integers_where(
            IssueComment, ["github_id", "issue_id"], github_id=list(issue_of)
        )
        if issue_of[github_id] != issue_id
    }


def _integers_where(
    model: type[models.Model], fields: list[str], **among: list[int]
) -> list[tuple[int, ...]]:
    """The integer `fields` of the rows of `model` whose fields (the keywords) hold one of the
    given integers each. Django's IN lookup examines each value on its own, which cost more
    than the queries; the values are parameters all the same. The longest list is sent in as
    many statements as the database's parameter limit asks."""
    if not all(among.values()):
        return []
    quote = connection.ops.quote_name
    column = {name: quote(model._meta.get_field(name).column) for name in [*fields, *among]}
    *fixed, (split_name, split_values) = sorted(among.items(), key=lambda item: len(item[1]))
    fixed_params = [value for _, values in fixed for value in values]
    most = connection.features.max_query_params
    limit = most - len(fixed_params) if most else len(split_values)
    found: list[tuple[int, ...]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(split_values), limit):
            chunk = split_values[start : start + limit]
            where = " AND ".join(
                f"{column[name]} IN ({', '.join(['%s'] * len(values))})"
                for name, values in [*fixed, (split_name, chunk)]
            )
            cursor.execute(
                # Only the model's own table and column names are written in.
                f"SELECT {', '.join(column[name] for name in fields)} "  # noqa: S608
                f"FROM {quote(model._meta.db_table)} WHERE {where}",
                [*fixed_params, *chunk],
            )
            found.extend(cursor.fetchall())
    return found


def _stored_issues(
    records: list[IssueRecord], repository_ids: dict[tuple[str, str], int]
) -> dict[tuple[int, int], tuple[int, Any]]:
    """(repository id, number) -> (issue id, updated_at) of the records' issues already stored."""
    wanted = {(repository_ids[r.repository_key], r.number) for r in records}
    # A superset by two IN lists, narrowed here: portable and cheap for one batch.
    return {
        (repository_id, number): (issue_id, updated_at)
        for issue_id, repository_id, number, updated_at in Issue.objects.filter(
            repository_id__in={key[0] for key in wanted}, number__in={key[1] for key in wanted}
        ).values_list("id", "repository_id", "number", "updated_at")
        if (repository_id, number) in wanted
    }


def issues_remove_gone(*, repository_id: int, numbers: Sequence[int]) -> list[int]:
    """Remove issues that GitHub no longer has (deleted, or transferred to another repository),
    with their threads. An issue that another app protects (an item of a study: its labels are
    research data) stays and is announced as changed upstream. Returns the ids of those kept.
    """
    kept: list[int] = []
    issue_ids = Issue.objects.filter(repository_id=repository_id, number__in=numbers).values_list(
        "id", flat=True
    )
    for issue_id in issue_ids:
        try:
            with transaction.atomic():
                Issue.objects.filter(id=issue_id).delete()
        except ProtectedError:
            kept.append(issue_id)
    if kept:
        issues_changed_upstream.send(sender=Issue, issue_ids=kept, gone=True)
    return kept


def issue_texts_render(*, issue_ids: list[int] | None) -> int:
    """Render and sanitise the Markdown of issues and comments not rendered yet, and extract the
    issues' facets (exceptions, features, versions, GPUs) from their whole thread.

    Storing and rendering are separate steps so that a bulk import stays fast; each text is
    rendered once, after it is stored, never on a page view. An issue is pending while its
    `body_html` is empty (storing an issue or its thread empties it); a rendered empty body is
    "<p></p>". Returns the number of texts rendered.
    """
    rendered = 0
    comments = IssueComment.objects.filter(body_html="").exclude(body="")
    issues = Issue.objects.filter(body_html="")
    if issue_ids is not None:
        issues = issues.filter(id__in=issue_ids)
        comments = comments.filter(issue_id__in=issue_ids)
    while chunk := list(comments.only("id", "body")[:BATCH_SIZE]):
        _rows_update(
            IssueComment,
            ["body_html"],
            [(render_markdown(comment.body) or "<p></p>", comment.id) for comment in chunk],
        )
        rendered += len(chunk)
    while chunk := list(issues.only("id", "title", "body")[:BATCH_SIZE]):
        threads: dict[int, list[str]] = defaultdict(list)
        for issue_id, body in IssueComment.objects.filter(
            issue_id__in=[issue.id for issue in chunk]
        ).values_list("issue_id", "body"):
            threads[issue_id].append(body)
        _rows_update(
            Issue,
            ["body_html", "facets"],
            [
                (
                    render_markdown(issue.body) or "<p></p>",
                    issue_facets(issue.title, issue.body, threads[issue.id]),
                    issue.id,
                )
                for issue in chunk
            ],
        )
        rendered += len(chunk)
    return rendered


def _rows_update(model: type[models.Model], fields: list[str], rows: list[tuple]) -> None:
    """UPDATE each row's `fields` by id (the row's last value) in one executemany, in one
    transaction. Django's bulk_update builds a CASE per row and field, which cost more than
    rendering the texts (3.7 of 6 s for 2,000 issues)."""
    quote = connection.ops.quote_name
    columns = [model._meta.get_field(name) for name in fields]
    assignments = ", ".join(f"{quote(column.column)} = %s" for column in columns)
    # Only the model's own table and column names are written in; every value is a parameter.
    sql = f"UPDATE {quote(model._meta.db_table)} SET {assignments} WHERE {quote('id')} = %s"  # noqa: S608
    prepared = [
        [
            *(
                column.get_db_prep_save(value, connection)
                for column, value in zip(columns, row[:-1], strict=True)
            ),
            row[-1],
        ]
        for row in rows
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(sql, prepared)


# --------------------------------------------------------------------------- Repositories


def repository_for_name(*, owner: str, name: str) -> Repository:
    """The corpus repository of that name (`corpus.selectors.repository_by_name`: its own name,
    its name after a rename, or an alias), created when the corpus does not hold it yet."""
    return repository_by_name(owner=owner, name=name) or Repository.objects.create(
        owner=owner, name=name
    )


def _repository_for_record(
    *, owner: str, name: str, github_id: int | None
) -> tuple[Repository, int | None]:
    """The row of the repository a record names, and the id of a row merged into it on the way
    (or None). GitHub's id, when the record gives it, decides: the row holding it is the
    repository whatever the record calls it (a name the row lacks becomes its alias), and a
    row of that name without an id is the same repository met earlier by name, which the two
    rows become one. Raises RepositoryConflict when the corpus holds the name as another id.
    """
    named = repository_by_name(owner=owner, name=name)
    if github_id is None:
        return named or Repository.objects.create(owner=owner, name=name), None
    identified = Repository.objects.filter(github_id=github_id).first()
    if identified is None:
        if named is None:
            return Repository.objects.create(owner=owner, name=name, github_id=github_id), None
        if named.github_id is not None:
            raise RepositoryConflict(
                f"{owner}/{name} is GitHub's repository {github_id} here, but the corpus holds "
                f"{named.full_name} as GitHub's repository {named.github_id}."
            )
        named, _ = model_update(instance=named, fields=["github_id"], data={"github_id": github_id})
        return named, None
    if named is None:
        _alias_add(repository=identified, full_name=f"{owner}/{name}")
        return identified, None
    if named.pk == identified.pk or named.github_id is not None:
        # A name GitHub gave to another repository since (it has its own id): the id decides.
        return identified, None
    kept = repositories_merge(one=identified, other=named)
    return kept, named.pk if kept.pk == identified.pk else identified.pk


@transaction.atomic
def repository_note_upstream(
    *, repository: Repository, github_id: int, full_name: str
) -> Repository:
    """Record what GitHub says `repository` is: its id and, after a rename, its new name
    (`full_name` is GitHub's OWNER/NAME now). The row keeps the name the corpus knows it by, so
    "owner/name#number" references and study items stay valid; lookups use `renamed_to` from
    then on, and a name it had before stays an alias.

    Returns the row of that GitHub repository: `repository`, unless another row holds the id
    already. Then the two rows are one repository met under two names (a former name and the
    new one) and are made one (`repositories_merge`). A different id behind a row that has one
    is an ApplicationError (the name now belongs to another repository).
    """
    if repository.github_id is not None and repository.github_id != github_id:
        raise ApplicationError(
            f"{repository.renamed_to or repository.full_name} is now a different GitHub "
            f"repository ({full_name}) than the one stored as {repository.full_name}."
        )
    holder = Repository.objects.filter(github_id=github_id).exclude(pk=repository.pk).first()
    if holder is not None:
        repository = repositories_merge(one=holder, other=repository)
    elif repository.github_id is None:
        repository, _ = model_update(
            instance=repository, fields=["github_id"], data={"github_id": github_id}
        )
    former = repository.renamed_to
    renamed_to = "" if full_name.lower() == repository.full_name.lower() else full_name
    repository, _ = model_update(
        instance=repository, fields=["renamed_to"], data={"renamed_to": renamed_to}
    )
    _alias_add(repository=repository, full_name=former)
    return repository


@transaction.atomic
def repositories_merge(*, one: Repository, other: Repository) -> Repository:
    """Make two rows that are one GitHub repository (met under two names) one, and return it.

    The older row stays: its name is the one the corpus has known longest, which references
    ("owner/name#number") use. It takes over the other's GitHub id, its GitHub name (when the
    other is the row GitHub identified), its names as aliases, its issues, and the rows of
    other apps that point to it (an ingest source), whatever app they are in.

    An issue both rows hold is one issue: one of its two rows stays, the one that other rows
    use (a study's item) or else the older row's, with the newer text of the two and the
    comments and fixes of both (the newer copy's fix wins on the same kind and ref). When other
    rows use both copies, nothing is changed and RepositoryConflict says which issues.
    """
    rows = list(Repository.objects.select_for_update().filter(pk__in=[one.pk, other.pk]))
    if len(rows) != 2:
        raise RepositoryConflict(f"{one.full_name} or {other.full_name} is no longer stored.")
    kept, gone = sorted(rows, key=lambda row: row.pk)
    if None not in (kept.github_id, gone.github_id) and kept.github_id != gone.github_id:
        raise RepositoryConflict(
            f"{kept.full_name} and {gone.full_name} are two GitHub repositories "
            f"({kept.github_id} and {gone.github_id})."
        )
    _issues_merge(kept=kept, gone=gone)
    for relation in Repository._meta.related_objects:
        if relation.related_model in (Issue, RepositoryAlias) or not relation.one_to_many:
            continue
        relation.related_model._base_manager.filter(**{relation.field.name: gone}).update(
            **{relation.field.name: kept}
        )
    RepositoryAlias.objects.filter(repository=gone).update(repository=kept)
    names = [gone.full_name, gone.renamed_to]
    if gone.github_id is not None:
        kept.github_id, github_name = gone.github_id, gone.renamed_to or gone.full_name
        renamed_to = "" if github_name.lower() == kept.full_name.lower() else github_name
        names.append(kept.renamed_to)
        kept.renamed_to = renamed_to
    gone.delete()  # frees its id and name for the row that stays
    kept.save(update_fields=["github_id", "renamed_to", "updated_at"])
    for full_name in names:
        _alias_add(repository=kept, full_name=full_name)
    logger.info("%s and %s are one repository: merged into %s", kept, gone, kept)
    return kept


def _issues_merge(*, kept: Repository, gone: Repository) -> None:
    """Move the issues of `gone` to `kept`; an issue both hold keeps one row (see
    `repositories_merge`)."""
    gone_issues = {issue.number: issue for issue in Issue.objects.filter(repository=gone)}
    kept_issues = {
        issue.number: issue
        for issue in Issue.objects.filter(repository=kept, number__in=list(gone_issues))
    }
    pairs = [(kept_issues[number], gone_issues[number]) for number in sorted(kept_issues)]
    in_use, users = _issues_in_use([issue.pk for pair in pairs for issue in pair])
    both_used = [first.number for first, second in pairs if {first.pk, second.pk} <= in_use]
    if both_used:
        shown = ", ".join(f"#{number}" for number in both_used[:10])
        more = f" and {len(both_used) - 10} more" if len(both_used) > 10 else ""
        raise RepositoryConflict(
            f"{gone.full_name} is {kept.full_name} under another name, but both copies of "
            f"issues {shown}{more} are in use ({', '.join(sorted(users))}); the two are kept "
            "apart until one copy of each of these issues is no longer used."
        )
    staying: list[Issue] = []
    leaving: list[int] = []
    changed: list[int] = []
    for kept_copy, gone_copy in pairs:
        stay, leave = (gone_copy, kept_copy) if gone_copy.pk in in_use else (kept_copy, gone_copy)
        newer = leave.updated_at > stay.updated_at
        _thread_move(from_issue=leave, to_issue=stay, newer=newer)
        if newer:
            for name in ISSUE_FIELDS:
                setattr(stay, name, getattr(leave, name))
            changed.append(stay.pk)
        # Rendered again: the facets read the whole thread, which may have grown.
        stay.body_html, stay.facets = "", {}
        staying.append(stay)
        leaving.append(leave.pk)
    Issue.objects.filter(pk__in=leaving).delete()
    Issue.objects.bulk_update(staying, [*ISSUE_FIELDS, "facets"], batch_size=BATCH_SIZE)
    Issue.objects.filter(repository=gone).update(repository=kept)
    if changed:
        issues_changed_upstream.send(sender=Issue, issue_ids=changed)
    if staying:
        staying_ids = [issue.pk for issue in staying]
        transaction.on_commit(lambda: issue_texts_render(issue_ids=staying_ids))


def _issues_in_use(issue_ids: list[int]) -> tuple[set[int], set[str]]:
    """Those of the issues that rows other than their comments and fixes point to (a study's
    items), and what those rows are called."""
    used: set[int] = set()
    users: set[str] = set()
    for relation in Issue._meta.related_objects:
        if relation.related_model in (IssueComment, LinkedFix) or not relation.one_to_many:
            continue
        found = set(
            relation.related_model._base_manager.filter(
                **{f"{relation.field.name}__in": issue_ids}
            ).values_list(relation.field.attname, flat=True)
        )
        if found:
            used |= found
            users.add(str(relation.related_model._meta.verbose_name_plural))
    return used, users


def _thread_move(*, from_issue: Issue, to_issue: Issue, newer: bool) -> None:
    """Give `to_issue` the comments and fixes of `from_issue` (the copy about to go)."""
    IssueComment.objects.filter(issue=from_issue).update(issue=to_issue)
    existing = {
        (kind, ref): fix_id
        for fix_id, kind, ref in LinkedFix.objects.filter(issue=to_issue).values_list(
            "id", "kind", "ref"
        )
    }
    for fix_id, kind, ref in LinkedFix.objects.filter(issue=from_issue).values_list(
        "id", "kind", "ref"
    ):
        if (kind, ref) in existing and not newer:
            continue  # deleted with its issue
        if (kind, ref) in existing:
            LinkedFix.objects.filter(id=existing[(kind, ref)]).delete()
        LinkedFix.objects.filter(id=fix_id).update(issue=to_issue)


def _alias_add(*, repository: Repository, full_name: str) -> None:
    """Record `full_name` ("owner/name") as another name of the repository, unless it is one of
    its names already. The name stops being another repository's alias (GitHub gives a freed
    name to whoever takes it)."""
    names = {repository.full_name.lower(), repository.renamed_to.lower()}
    if not full_name or full_name.lower() in names:
        return
    owner, name = full_name.split("/", 1)
    RepositoryAlias.objects.filter(owner__iexact=owner, name__iexact=name).exclude(
        repository=repository
    ).delete()
    if not repository.aliases.filter(owner__iexact=owner, name__iexact=name).exists():
        RepositoryAlias.objects.create(repository=repository, owner=owner, name=name)
