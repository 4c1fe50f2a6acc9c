"""The sync service in this process against the stand-in GitHub over real HTTP: what it stores,
what it costs in requests, and how it survives rate limits, errors, edits and lost workers."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.utils import timezone

from common.exceptions import ApplicationError, PermissionDeniedError
from corpus.models import Issue, IssueComment, Repository
from ingest.dispatch import sync_request
from ingest.follows import study_follow_create
from ingest.github import TransientGitHubError
from ingest.models import Source, StudyFollow, SyncRun
from ingest.runs import sync_run_claim, sync_runs_open_for_due_sources
from ingest.sources import source_create
from ingest.sync import sync_run_execute, sync_run_to_completion
from ingest.tasks import sync_due_sources, sync_source
from labeling.models import Annotation, StudyItem
from labeling.services.annotations import DimensionAnswer, assignment_save
from tests.conftest import require_postgres
from tests.ingest.conftest import SAMPLE_REPOSITORIES

DEEPSPEED = "microsoft/DeepSpeed"


def add_issues(github, full_name: str, count: int, *, first: int = 1, **fields) -> None:
    owner, name = full_name.split("/")
    if not github.has_repository(owner, name):
        github.add_repository(owner, name)
    for number in range(first, first + count):
        github.add_issue(
            owner,
            name,
            {
                "number": number,
                "title": f"Issue {number}",
                "body": f"Body of {number}",
                "created_at": f"2024-01-01T00:{number // 60:02d}:{number % 60:02d}Z",
                "updated_at": f"2024-02-01T00:{number // 60:02d}:{number % 60:02d}Z",
                "closed_at": f"2024-02-01T00:{number // 60:02d}:{number % 60:02d}Z",
                "labels": ["bug"],
                **fields,
            },
            comments=[{"body": f"comment on {number}", "user": "helper"}],
        )


def label(item: StudyItem, people) -> None:
    """annotator1 saves a draft label on the item (a draft counts as labeled)."""
    assignment = item.assignments.get(annotator=people["annotator1"])
    assignment_save(
        assignment=assignment,
        user=people["annotator1"],
        answers={"symptom": DimensionAnswer(category_keys=["crash"])},
        submit=False,
    )


def list_requests(github) -> list[str]:
    return [path for path in github.paths_requested() if path.split("?")[0].endswith("/issues")]


# ----------------------------------------------------------------------------- the corpus


def test_first_sync_stores_every_issue_comment_and_linked_fix(
    sample_github, make_source, sync, corpus
):
    for full_name in SAMPLE_REPOSITORIES:
        sample_github.reset_log()
        run = sync(make_source(full_name))
        requests_served = sample_github.request_count

        assert run.status == SyncRun.Status.DONE, run.error
        corpus.assert_same(sample_github, full_name)
        stored = corpus.stored(full_name)
        issues = len(stored)
        fixes = sum(len(issue["fixes"]) for issue in stored.values())
        assert run.counts["created"] == issues == 15
        assert run.counts["fixes"] == fixes
        assert run.counts["comments"] == sum(len(i["comments"]) for i in stored.values())
        # One repository lookup, one list page, one timeline per issue, one request per fix.
        assert run.requests_used == 2 + issues + fixes == requests_served
        assert run.progress == 1.0
        assert run.finished_at is not None and run.attempts == 1
    assert any(fix[0] == "pr" for i in corpus.stored(DEEPSPEED).values() for fix in i["fixes"])
    issue = Issue.objects.get(repository__name="DeepSpeed", number=7061)
    assert issue.body_html and "<script" not in issue.body_html
    assert issue.raw["html_url"].endswith("/7061") and "body" not in issue.raw


def test_second_sync_changes_nothing_and_makes_at_most_two_requests(
    sample_github, make_source, sync
):
    source = make_source(DEEPSPEED)
    sync(source)
    before = list(Issue.objects.values_list("id", "stored_at").order_by("id"))
    comments_before = list(IssueComment.objects.values_list("id", "github_id").order_by("id"))
    sample_github.reset_log()

    run = sync(source)

    assert run.status == SyncRun.Status.DONE
    assert sample_github.request_count == run.requests_used <= 2
    assert run.counts.get("created", 0) == run.counts.get("updated", 0) == 0
    assert list(Issue.objects.values_list("id", "stored_at").order_by("id")) == before
    assert list(IssueComment.objects.values_list("id", "github_id").order_by("id")) == (
        comments_before
    )


def test_pages_are_committed_with_a_time_cursor(sample_github, make_source, sync, settings):
    settings.INGEST_PER_PAGE = 4
    source = make_source(DEEPSPEED)

    run = sync(source)

    source.refresh_from_db()
    newest = max(issue["updated_at"] for issue in sample_github.issues("microsoft", "DeepSpeed"))
    assert datetime.fromisoformat(source.cursor["since"]) == datetime.fromisoformat(
        newest.replace("Z", "+00:00")
    )
    assert run.counts["pages"] >= 18 // 4
    # Every page after the first is the first page of a listing from the cursor.
    assert all("page=1" in path for path in list_requests(sample_github))
    assert Issue.objects.count() == 15


def test_a_whole_page_with_one_timestamp_is_passed_by_page_number(
    github, make_source, sync, settings, corpus
):
    settings.INGEST_PER_PAGE = 3
    add_issues(github, "acme/trainer", 7, updated_at="2024-03-01T00:00:00Z")

    run = sync(make_source("acme/trainer"))

    assert run.status == SyncRun.Status.DONE
    assert any("page=2" in path for path in list_requests(github))
    corpus.assert_same(github, "acme/trainer")


def test_a_server_with_smaller_pages_than_asked_is_read_to_the_end(
    github, make_source, sync, corpus, monkeypatch
):
    add_issues(github, "acme/trainer", 12)
    serve = github.handle

    def handle(method, target, headers):
        # Serves at most 5 a page whatever per_page asks, with Link headers as usual.
        return serve(method, target.replace("per_page=100", "per_page=5"), headers)

    monkeypatch.setattr(github, "handle", handle)
    run = sync(make_source("acme/trainer"))

    assert run.status == SyncRun.Status.DONE
    corpus.assert_same(github, "acme/trainer")


def test_an_update_while_the_list_is_read_leaves_no_gap(
    github, make_source, sync, settings, corpus, monkeypatch
):
    settings.INGEST_PER_PAGE = 3
    add_issues(github, "acme/trainer", 8)
    serve = github.handle
    edited = []

    def handle(method, target, headers):
        response = serve(method, target, headers)
        if "/issues?" in target and not edited:
            # Issue 2 jumps to the end of the list; on a page-numbered read issue 4 would slide
            # onto the first page after it was read and be missed.
            edited.append(github.edit_issue("acme", "trainer", 2, title="Edited while listed"))
        return response

    monkeypatch.setattr(github, "handle", handle)
    run = sync(make_source("acme/trainer"))

    assert run.status == SyncRun.Status.DONE
    corpus.assert_same(github, "acme/trainer")
    assert Issue.objects.get(number=2).title == "Edited while listed"


def test_edits_new_issues_and_comments_between_syncs_arrive(
    sample_github, make_source, sync, corpus
):
    source = make_source(DEEPSPEED)
    sync(source)
    sample_github.edit_issue("microsoft", "DeepSpeed", 7061, title="Renamed upstream")
    sample_github.add_comment("microsoft", "DeepSpeed", 1722, body="Still happens on 0.14")
    sample_github.add_issue(
        "microsoft",
        "DeepSpeed",
        {"number": 9001, "title": "New crash", "state": "closed", "labels": ["bug"]},
        comments=[{"body": "stack trace", "user": "reporter"}],
    )
    sample_github.add_linked_fix("microsoft", "DeepSpeed", 9001, "pr", "9002")
    sample_github.reset_log()

    run = sync(source)

    changed = Issue.objects.filter(number__in=[7061, 1722, 9001])
    fixes = sum(issue.linked_fixes.count() for issue in changed)
    # The lookup and the list, a timeline per changed issue, a request per fix of theirs.
    assert run.requests_used == 2 + 3 + fixes
    corpus.assert_same(sample_github, DEEPSPEED)
    assert run.counts["created"] == 1 and run.counts["updated"] == 2
    assert Issue.objects.get(number=7061).title == "Renamed upstream"
    new_issue = Issue.objects.get(number=9001)
    assert new_issue.body_html == "" or new_issue.body == ""
    assert new_issue.linked_fixes.get().ref == "9002"


def test_a_comment_deleted_upstream_disappears(
    sample_github, make_source, sync, corpus, delete_comment
):
    source = make_source(DEEPSPEED)
    sync(source)
    comment = IssueComment.objects.filter(issue__number=1722).first()

    delete_comment(sample_github, DEEPSPEED, 1722, comment.github_id)
    sync(source)

    assert not IssueComment.objects.filter(github_id=comment.github_id).exists()
    corpus.assert_same(sample_github, DEEPSPEED)


def test_nul_bytes_are_stripped_and_deleted_accounts_stored_as_ghost(github, make_source, sync):
    github.add_repository("acme", "trainer")
    github.add_issue(
        "acme",
        "trainer",
        {
            "number": 1,
            "title": "Loss\x00 is NaN",
            "body": "trace\x00:",
            "state": "closed",
            "labels": ["b\x00ug"],
            "user": None,
        },
        comments=[{"body": "same\x00 here", "user": None}],
    )

    run = sync(make_source("acme/trainer"))

    assert run.status == SyncRun.Status.DONE, run.error
    issue = Issue.objects.get(number=1)
    assert (issue.title, issue.body, issue.labels, issue.author) == (
        "Loss is NaN",
        "trace:",
        ["bug"],
        "ghost",
    )
    comment = issue.comments.get()
    assert (comment.body, comment.author) == ("same here", "ghost")
    assert "\\u0000" not in str(issue.raw)


# ----------------------------------------------------------------------------- pull requests


def test_pull_requests_are_skipped_unless_the_source_keeps_them(
    sample_github, make_source, sync, corpus
):
    skipping = make_source(DEEPSPEED)
    run = sync(skipping)
    assert run.counts["pull_requests_skipped"] == 3
    assert not Issue.objects.filter(is_pull_request=True).exists()
    sample_github.reset_log()
    assert sync(skipping).requests_used <= 2  # the cursor went past them too

    keeping = make_source(DEEPSPEED, include_pull_requests=True)
    sync(keeping)
    pulls = Issue.objects.filter(is_pull_request=True)
    assert sorted(pulls.values_list("number", flat=True)) == [857, 1994, 4480]
    corpus.assert_same(sample_github, DEEPSPEED, include_pull_requests=True)


# ----------------------------------------------------------------------------- faults


def test_a_rate_limit_mid_sync_makes_the_run_wait_and_finish_after_the_reset(
    sample_github, make_source, settings, corpus
):
    settings.INGEST_PER_PAGE = 5
    sample_github.rate_limit_after = 12
    sample_github.rate_limit_reset_seconds = 0.5
    source = make_source(DEEPSPEED)
    run = sync_request(source=source, enqueue=False)

    outcome = sync_run_execute(run_id=run.pk, worker="first")

    run.refresh_from_db()
    assert outcome.status == run.status == SyncRun.Status.WAITING
    assert run.rate_limit_reset == outcome.wait_until and run.rate_limit_remaining == 0
    assert run.lease_expires_at > run.rate_limit_reset
    stored_while_waiting = Issue.objects.count()
    assert 0 < stored_while_waiting < 15  # the pages read before the limit are kept
    # Asking again while it waits gives the same run; nothing else starts.
    assert sync_request(source=source, enqueue=False) == run
    assert sync_run_claim(run_id=run.pk, worker="too-early") is None

    final = sync_run_to_completion(run_id=run.pk, worker="second")

    run.refresh_from_db()
    assert final.status == run.status == SyncRun.Status.DONE
    assert run.attempts >= 2
    sample_github.rate_limit_after = None
    corpus.assert_same(sample_github, DEEPSPEED)


def test_a_server_error_every_fifth_request_gives_the_same_corpus(
    sample_github, make_source, sync, corpus
):
    sample_github.fail_every = 5
    for full_name in SAMPLE_REPOSITORIES:
        run = sync(make_source(full_name))
        assert run.status == SyncRun.Status.DONE, run.error
    sample_github.fail_every = None
    for full_name in SAMPLE_REPOSITORIES:
        corpus.assert_same(sample_github, full_name)


def test_persistent_server_errors_requeue_the_run_and_keep_what_was_read(
    sample_github, make_source, settings, corpus
):
    settings.INGEST_PER_PAGE = 5
    source = make_source(DEEPSPEED)
    run = sync_request(source=source, enqueue=False)
    serve = sample_github.handle
    served = []

    def handle(method, target, headers):
        served.append(target)
        if len(served) > 12:
            sample_github.fail_every = 1
        return serve(method, target, headers)

    sample_github.handle = handle
    with pytest.raises(TransientGitHubError):
        sync_run_execute(run_id=run.pk, worker="first")

    run.refresh_from_db()
    assert run.status == SyncRun.Status.QUEUED
    assert run.error.startswith("retrying after:") and run.worker == ""
    assert Issue.objects.exists()
    sample_github.handle = serve
    sample_github.fail_every = None
    assert sync_run_to_completion(run_id=run.pk, worker="second").status == SyncRun.Status.DONE
    corpus.assert_same(sample_github, DEEPSPEED)


def test_unknown_repository_fails_the_run(github, make_source, sync):
    run = sync(make_source("nobody/nothing"))

    assert run.status == SyncRun.Status.FAILED
    assert "Not Found" in run.error or "404" in run.error
    assert run.finished_at is not None and run.lease_expires_at is None


# ----------------------------------------------------------------------------- gone and renamed


def test_an_issue_deleted_while_its_page_is_read_is_skipped(
    sample_github, make_source, sync, corpus, monkeypatch
):
    serve = sample_github.handle
    deleted = []

    def handle(method, target, headers):
        response = serve(method, target, headers)
        if "/issues?" in target and not deleted:
            sample_github.delete_issue("microsoft", "DeepSpeed", 7061)
            deleted.append(7061)
        return response

    monkeypatch.setattr(sample_github, "handle", handle)
    run = sync(make_source(DEEPSPEED))

    assert run.status == SyncRun.Status.DONE
    assert run.counts["gone"] == 1 and run.counts["created"] == 14
    assert not Issue.objects.filter(number=7061).exists()
    corpus.assert_same(sample_github, DEEPSPEED)


def test_a_repository_gone_mid_sync_fails_the_run_and_keeps_the_corpus(
    sample_github, make_source, sync, monkeypatch
):
    source = make_source(DEEPSPEED)
    sync(source)
    stored = Issue.objects.count()
    sample_github.edit_issue("microsoft", "DeepSpeed", 7061, title="Edited before the deletion")
    serve = sample_github.handle

    def handle(method, target, headers):
        listing = "/issues?" in target or target.endswith("/DeepSpeed")
        if listing and not any("/issues?" in path for path in sample_github.paths_requested()):
            return serve(method, target, headers)
        sample_github.requests.append((method, target, 404))
        return sample_github._json_response(404, {"message": "Not Found"})

    monkeypatch.setattr(sample_github, "handle", handle)
    run = sync(source)

    assert run.status == SyncRun.Status.FAILED and "Not Found" in run.error
    assert Issue.objects.count() == stored
    assert Issue.objects.get(number=7061).title != "Edited before the deletion"


def test_reconciliation_removes_deleted_and_transferred_issues_and_keeps_labeled_ones(
    sample_github, make_source, sync, corpus, study, people
):
    trainer = make_source("acme/trainer")
    add_issues(sample_github, "acme/trainer", 4)
    sync(trainer)
    deepspeed = make_source(DEEPSPEED)
    sync(deepspeed)  # the study's issues, imported already
    item = StudyItem.objects.get(study=study, issue__number=7061)
    label(item, people)
    sample_github.delete_issue("acme", "trainer", 1)
    new_number = sample_github.transfer_issue("acme", "trainer", 2, "microsoft", "DeepSpeed")
    sample_github.delete_issue("microsoft", "DeepSpeed", 7061)

    plain = sync(trainer)
    assert plain.counts.get("gone", 0) == 0  # an incremental listing cannot see deletions
    trainer_run = sync(trainer, reconcile=True)
    deepspeed_run = sync(deepspeed, reconcile=True)

    assert trainer_run.counts["gone"] == trainer_run.counts["reconciled"] == 2
    corpus.assert_same(sample_github, "acme/trainer")
    # The transferred issue arrived in its new repository, under its new number.
    moved = Issue.objects.get(repository__name="DeepSpeed", number=new_number)
    assert moved.title == "Issue 2"
    # The deleted issue that someone labeled stays, flagged; its labels are untouched.
    assert deepspeed_run.counts["gone"] == deepspeed_run.counts["gone_kept"] == 1
    assert Issue.objects.filter(repository__name="DeepSpeed", number=7061).exists()
    item.refresh_from_db()
    assert item.changed_upstream_at is not None
    assert Annotation.objects.filter(assignment__item=item).exists()
    trainer.refresh_from_db()
    assert trainer.reconciled_at is not None


def test_reconciliation_is_due_after_its_interval(sample_github, make_source, sync, settings):
    source = make_source(DEEPSPEED)
    sync(source)
    source.refresh_from_db()
    first_check = source.reconciled_at
    assert first_check is not None  # the first sync listed everything
    sample_github.reset_log()
    sync(source)
    assert len(list_requests(sample_github)) == 1

    Source.objects.filter(pk=source.pk).update(
        reconciled_at=timezone.now() - timedelta(hours=settings.INGEST_RECONCILE_HOURS + 1)
    )
    sample_github.reset_log()
    sync(source)

    assert len(list_requests(sample_github)) == 2
    source.refresh_from_db()
    assert source.reconciled_at > first_check


def test_a_renamed_repository_keeps_its_row_and_study_items(
    sample_github, make_source, sync, corpus, study
):
    source = make_source(DEEPSPEED)
    sync(source)
    repository = Repository.objects.get(name="DeepSpeed")
    items_before = StudyItem.objects.filter(issue__repository=repository).count()
    sample_github.rename_repository("microsoft", "DeepSpeed", "deepspeedai", "DeepSpeed")
    sample_github.edit_issue("deepspeedai", "DeepSpeed", 7061, title="After the move")
    sample_github.reset_log()

    run = sync(source)

    repository.refresh_from_db()
    assert run.status == SyncRun.Status.DONE
    assert (repository.owner, repository.renamed_to) == ("microsoft", "deepspeedai/DeepSpeed")
    assert Repository.objects.count() == 3
    assert Issue.objects.get(repository=repository, number=7061).title == "After the move"
    assert StudyItem.objects.filter(issue__repository=repository).count() == items_before
    # Lookups use the new name from now on: no 301 round trip on the next sync.
    sample_github.reset_log()
    sync(source)
    assert [status for _, _, status in sample_github.requests] == [200, 200]
    # Unchanged issues keep the URLs they were stored with; the issues themselves are the same.
    served = corpus.server(sample_github, "deepspeedai/DeepSpeed")
    assert sorted(corpus.stored(DEEPSPEED)) == sorted(served)


def test_a_source_added_under_the_new_name_finds_the_renamed_row(sample_github, make_source, sync):
    sync(make_source(DEEPSPEED))
    sample_github.rename_repository("microsoft", "DeepSpeed", "deepspeedai", "DeepSpeed")
    sync(Source.objects.get())

    source = make_source("deepspeedai/DeepSpeed", state="all")

    assert source.repository.full_name == DEEPSPEED


# ----------------------------------------------------------------------------- studies


def test_an_issue_edited_after_it_was_labeled_is_flagged_and_its_labels_kept(
    sample_github, make_source, sync, study, people
):
    source = make_source(DEEPSPEED)
    assert sync(source).counts.get("updated", 0) == 0  # the imported sample is up to date
    items = StudyItem.objects.filter(study=study, issue__repository__name="DeepSpeed")
    labeled, untouched = items.order_by("id")[:2]
    label(labeled, people)
    assignment = labeled.assignments.get(annotator=people["annotator1"])
    labels_before = list(
        Annotation.objects.filter(assignment=assignment).values_list("id", "categories__key")
    )
    for item in (labeled, untouched):
        sample_github.edit_issue("microsoft", "DeepSpeed", item.issue.number, body="Edited")

    run = sync(source)

    labeled.refresh_from_db()
    untouched.refresh_from_db()
    assert run.counts["updated"] == 2
    assert labeled.changed_upstream_at is not None
    assert untouched.changed_upstream_at is None  # nobody labeled it yet
    after = Annotation.objects.filter(assignment=assignment).values_list("id", "categories__key")
    assert list(after) == labels_before
    assert Issue.objects.get(pk=labeled.issue_id).body == "Edited"


def test_a_following_study_gets_matching_new_issues_assigned(
    sample_github, make_source, sync, study, people
):
    source = make_source(DEEPSPEED)
    sync(source)
    follow = study_follow_create(
        source=source, study=study, labels=["bug"], requires_linked_fix=True
    )
    items_before = set(StudyItem.objects.values_list("issue_id", flat=True))
    for number, labels in ((9001, ["bug"]), (9003, ["bug"]), (9004, ["question"])):
        sample_github.add_issue(
            "microsoft",
            "DeepSpeed",
            {"number": number, "title": f"New {number}", "state": "closed", "labels": labels},
        )
    sample_github.add_linked_fix("microsoft", "DeepSpeed", 9001, "pr", "9002")
    sample_github.add_linked_fix("microsoft", "DeepSpeed", 9004, "pr", "9005")

    run = sync(source)

    new_items = StudyItem.objects.exclude(issue_id__in=items_before)
    assert [item.issue.number for item in new_items] == [9001]  # bug and fixed
    item = new_items.get()
    assert item.round == study.rounds.order_by("-position").first()
    assert item.assignments.count() == study.k
    assert run.counts["followed"] == 1
    assert follow.study == study


def test_following_needs_a_manager_and_can_take_in_stored_issues(
    sample_github, make_source, sync, study, people, codebook_version
):
    from labeling.services.studies import study_create

    source = make_source(DEEPSPEED)
    sync(source)
    other = study_create(
        slug="other",
        name="Other",
        codebook_version=codebook_version,
        k=1,
        annotators=[people["annotator1"]],
        managers=[people["manager"]],
    )
    with pytest.raises(PermissionDeniedError):
        study_follow_create(source=source, study=other, created_by=people["annotator1"])

    study_follow_create(
        source=source,
        study=other,
        requires_linked_fix=True,
        include_existing=True,
        created_by=people["manager"],
    )

    fixed = Issue.objects.filter(
        repository__name="DeepSpeed", is_pull_request=False, linked_fixes__isnull=False
    ).distinct()
    assert set(other.items.values_list("issue_id", flat=True)) == set(
        fixed.values_list("id", flat=True)
    )
    with pytest.raises(ApplicationError, match="follows this source already"):
        study_follow_create(source=source, study=other)
    assert StudyFollow.objects.count() == 1


# ----------------------------------------------------------------------------- one run at a time


def test_two_sync_requests_give_one_run(sample_github, make_source):
    source = make_source(DEEPSPEED)

    first = sync_request(source=source)
    second = sync_request(source=source)

    assert first == second and first.status == SyncRun.Status.QUEUED
    assert first.task_id
    assert SyncRun.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_sync_requests_give_one_run(github):
    require_postgres()
    source = source_create(repository="acme/trainer")
    barrier = threading.Barrier(4)
    runs: list[int] = []
    errors: list[BaseException] = []

    def request() -> None:
        try:
            barrier.wait()
            runs.append(sync_request(source=source, enqueue=False).pk)
        except BaseException as error:  # reported below, with the thread's own traceback lost
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=request) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    assert len(set(runs)) == 1 and SyncRun.objects.count() == 1


def test_a_run_can_be_claimed_once(sample_github, make_source):
    run = sync_request(source=make_source(DEEPSPEED), enqueue=False)

    assert sync_run_claim(run_id=run.pk, worker="a") is not None
    assert sync_run_claim(run_id=run.pk, worker="b") is None
    assert sync_run_execute(run_id=run.pk, worker="b").status == "skipped"


def test_an_expired_lease_lets_a_new_run_start_and_stops_the_old_worker(
    sample_github, make_source, corpus
):
    source = make_source(DEEPSPEED)
    old = sync_request(source=source, enqueue=False)
    sync_run_claim(run_id=old.pk, worker="dead-worker")
    assert sync_request(source=source, enqueue=False) == old  # its lease still runs

    SyncRun.objects.filter(pk=old.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    new = sync_request(source=source, enqueue=False)

    old.refresh_from_db()
    assert new != old
    assert old.status == SyncRun.Status.FAILED and old.error.startswith("worker lost")
    assert sync_run_execute(run_id=old.pk, worker="dead-worker").status == "skipped"
    assert sync_run_to_completion(run_id=new.pk, worker="new").status == SyncRun.Status.DONE
    corpus.assert_same(sample_github, DEEPSPEED)


def test_an_execution_stops_after_its_time_budget_and_the_run_goes_on(
    sample_github, make_source, settings, corpus
):
    settings.INGEST_PER_PAGE = 4
    settings.INGEST_EXECUTION_SECONDS = 0
    source = make_source(DEEPSPEED)
    run = sync_request(source=source, enqueue=False)

    outcome = sync_run_execute(run_id=run.pk, worker="first")

    run.refresh_from_db()
    assert outcome.status == run.status == SyncRun.Status.QUEUED
    assert run.worker == "" and Issue.objects.count() < 15
    assert sync_run_to_completion(run_id=run.pk, worker="next").status == SyncRun.Status.DONE
    run.refresh_from_db()
    assert run.attempts > 2
    corpus.assert_same(sample_github, DEEPSPEED)
    # Inline (eager) tasks go on in the same call instead of queueing themselves.
    sample_github.edit_issue("microsoft", "DeepSpeed", 7061, title="Edited")
    result = sync_source.apply(args=[source.pk]).get()
    assert result["status"] == "done"


# ----------------------------------------------------------------------------- schedule and task


def test_due_sources_get_a_run_and_others_do_not(github, make_source):
    due = make_source("acme/one", interval_minutes=30)
    recent = make_source("acme/two", interval_minutes=30)
    make_source("acme/three", enabled=False)
    SyncRun.objects.create(source=recent, status=SyncRun.Status.DONE)
    old = SyncRun.objects.create(source=due, status=SyncRun.Status.FAILED)
    SyncRun.objects.filter(pk=old.pk).update(queued_at=timezone.now() - timedelta(minutes=31))

    opened = list(sync_runs_open_for_due_sources())

    assert [entry.run.source for entry in opened] == [due]
    assert opened[0].run.trigger == SyncRun.Trigger.SCHEDULE and opened[0].send_task
    assert list(sync_runs_open_for_due_sources()) == []  # the new run counts from now


def test_the_beat_task_sends_one_task_per_run_it_opens(
    github, make_source, django_capture_on_commit_callbacks
):
    make_source("acme/one")
    make_source("acme/two")

    with django_capture_on_commit_callbacks() as callbacks:
        requested = sync_due_sources()

    assert requested == 2 and len(callbacks) == 2
    assert SyncRun.objects.filter(trigger=SyncRun.Trigger.SCHEDULE).exclude(task_id="").count() == 2
    with django_capture_on_commit_callbacks() as callbacks:
        assert sync_due_sources() == 0
    assert callbacks == []


def test_the_task_runs_the_sync(sample_github, make_source, corpus):
    source = make_source(DEEPSPEED)
    run = sync_request(source=source, enqueue=False)

    result = sync_source.apply(args=[source.pk, run.pk]).get()

    assert result == {"run_id": run.pk, "status": "done"}
    corpus.assert_same(sample_github, DEEPSPEED)
    # Without a run id the task finds or makes one.
    assert sync_source.apply(args=[source.pk]).get()["status"] == "done"


def test_the_task_fails_the_run_when_out_of_retries(sample_github, make_source, settings):
    source = make_source(DEEPSPEED)
    run = sync_request(source=source, enqueue=False)
    sample_github.fail_every = 1

    with pytest.raises(TransientGitHubError):
        sync_source.apply(args=[source.pk, run.pk], retries=sync_source.max_retries)

    run.refresh_from_db()
    assert run.status == SyncRun.Status.FAILED and "kept failing" in run.error


# ----------------------------------------------------------------------------- sources


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"repository": "not a repo"}, "OWNER/NAME"),
        ({"repository": "a/b/c"}, "OWNER/NAME"),
        ({"repository": "acme/trainer", "labels": "bug"}, "list of label names"),
        ({"repository": "acme/trainer", "labels": ["a,b"]}, "comma"),
        ({"repository": "acme/trainer", "labels": ["x" * 51]}, "at most 50"),
        ({"repository": "acme/trainer", "interval_minutes": 1}, "interval"),
        ({"repository": "acme/trainer", "state": "merged"}, "state"),
        ({"repository": "acme/trainer", "since": datetime(2024, 1, 1)}, "time zone"),
        ({"repository": "acme/trainer", "since": datetime(2999, 1, 1, tzinfo=UTC)}, "future"),
    ],
)
def test_source_input_is_validated(db, options, message):
    with pytest.raises(ApplicationError, match=message):
        source_create(**options)


def test_sources_are_unique_and_names_are_matched_without_case(db):
    first = source_create(repository="https://github.com/Microsoft/DeepSpeed", labels=["bug", "x"])
    assert first.repository.full_name == "Microsoft/DeepSpeed" and first.labels == ["bug", "x"]
    with pytest.raises(ApplicationError, match="already"):
        source_create(repository="microsoft/deepspeed", labels=["X", "Bug"])
    second = source_create(repository="microsoft/deepspeed", state="open")
    assert second.repository == first.repository


def test_a_source_whose_run_lost_its_worker_is_due_at_once(github, make_source):
    source = make_source("acme/trainer", interval_minutes=60)
    run = sync_request(source=source, enqueue=False)
    sync_run_claim(run_id=run.pk, worker="dead-worker")
    assert list(sync_runs_open_for_due_sources()) == []

    SyncRun.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=1))
    replaced = [entry.run for entry in sync_runs_open_for_due_sources()]

    assert len(replaced) == 1 and replaced[0] != run
    run.refresh_from_db()
    assert run.status == SyncRun.Status.FAILED and run.error.startswith("worker lost")


def test_asking_again_sends_a_queued_run_whose_message_may_be_lost(
    github, make_source, django_capture_on_commit_callbacks, settings
):
    source = make_source("acme/trainer")
    with django_capture_on_commit_callbacks() as callbacks:
        run = sync_request(source=source)
    assert len(callbacks) == 1
    # Asked again at once: the first message is on its way, so none is added.
    with django_capture_on_commit_callbacks() as callbacks:
        assert sync_request(source=source) == run
    assert callbacks == []

    # No worker took the run for INGEST_RESEND_SECONDS: its message may have gone with a broker
    # that restarted, and asking again sends one, with a new task id.
    SyncRun.objects.filter(pk=run.pk).update(
        queued_at=timezone.now() - timedelta(seconds=settings.INGEST_RESEND_SECONDS + 1)
    )
    with django_capture_on_commit_callbacks() as callbacks:
        again = sync_request(source=source)
    assert again == run and len(callbacks) == 1
    first_task_id = run.task_id
    again.refresh_from_db()
    assert again.task_id != first_task_id and again.status == SyncRun.Status.QUEUED

    # A run that a worker holds is left to it.
    sync_run_claim(run_id=run.pk, worker="busy-worker")
    with django_capture_on_commit_callbacks() as callbacks:
        assert sync_request(source=source) == run
    assert callbacks == []


def test_asking_again_after_the_reset_wakes_a_waiting_run(
    github, make_source, django_capture_on_commit_callbacks
):
    source = make_source("acme/trainer")
    run = sync_request(source=source, enqueue=False)
    SyncRun.objects.filter(pk=run.pk).update(
        status=SyncRun.Status.WAITING,
        rate_limit_reset=timezone.now() - timedelta(seconds=1),
        lease_expires_at=timezone.now() + timedelta(minutes=5),
    )

    with django_capture_on_commit_callbacks() as callbacks:
        again = sync_request(source=source)

    assert again == run
    assert len(callbacks) == 1  # the task is sent again for the same run
    again.refresh_from_db()
    assert again.task_id and again.status == SyncRun.Status.WAITING
