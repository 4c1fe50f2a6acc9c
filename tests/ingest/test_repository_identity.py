"""A renamed repository is one repository however the corpus first meets it: by GitHub's id (an
import line's `repository_id`, a sync), by GitHub's redirect from a former name, or by a name it
was met under before. The demo's sample says microsoft/DeepSpeed; GitHub answers
deepspeedai/DeepSpeed since the move, with the same id."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from corpus.issue_import import issue_file_lines
from corpus.models import Issue, IssueComment, Repository, RepositoryAlias
from corpus.services import issues_import
from exports.tables import report_filter_choices
from ingest.github import GitHubClient
from ingest.models import Source, SyncRun
from ingest.sources import source_create
from labeling.models import StudyItem
from labeling.services.studies import study_create
from tests.ingest.conftest import SAMPLE_PATH

OLD, NEW = ("microsoft", "DeepSpeed"), ("deepspeedai", "DeepSpeed")
DEEPSPEED_ID = 235860204  # GitHub's id of the repository, under either name


def sample_lines(*, with_ids: bool = True, only: str | None = None) -> list[dict]:
    lines = [json.loads(line) for line in SAMPLE_PATH.read_text().splitlines() if line.strip()]
    if only is not None:
        lines = [line for line in lines if line["repository"] == only]
    if not with_ids:
        for line in lines:
            line.pop("repository_id", None)
    return lines


def import_lines(lines: list[dict]):
    stream = io.BytesIO("\n".join(json.dumps(line) for line in lines).encode())
    return issues_import(objects=issue_file_lines(stream))


def deepspeed_rows() -> list[Repository]:
    return list(Repository.objects.filter(name__iexact="DeepSpeed"))


def systems_of_a_study_of_everything(codebook_version) -> list[str]:
    study = study_create(
        slug="everything",
        name="Everything",
        codebook_version=codebook_version,
        k=1,
        issues=list(Issue.objects.filter(is_pull_request=False)),
    )
    return report_filter_choices(study=study)["repositories"]


@pytest.fixture
def renamed_github(sample_github):
    sample_github.rename_repository(*OLD, *NEW)
    sample_github.reset_log()
    return sample_github


def test_the_sample_carries_the_repository_id_of_deepspeed():
    ids = {line.get("repository_id") for line in sample_lines(only="microsoft/DeepSpeed")}
    assert ids == {DEEPSPEED_ID}


def test_demo_then_a_sync_of_the_new_name_keeps_one_deepspeed(renamed_github, codebook_version):
    call_command("demo", stdout=io.StringIO())
    demo_items = StudyItem.objects.filter(study__slug="demo").count()

    call_command("sync_github", "deepspeedai/DeepSpeed", "--now", stdout=io.StringIO())

    assert SyncRun.objects.get().status == SyncRun.Status.DONE
    assert Issue.objects.count() == 45
    [deepspeed] = deepspeed_rows()
    assert (deepspeed.full_name, deepspeed.github_id) == ("microsoft/DeepSpeed", DEEPSPEED_ID)
    assert deepspeed.renamed_to == "deepspeedai/DeepSpeed"
    assert Source.objects.get().repository == deepspeed
    assert StudyItem.objects.filter(study__slug="demo").count() == demo_items
    systems = systems_of_a_study_of_everything(codebook_version)
    assert systems == ["NVIDIA/Megatron-LM", "huggingface/transformers", "microsoft/DeepSpeed"]


def test_without_ids_the_former_name_is_found_through_githubs_redirect(
    renamed_github, make_source, sync, codebook_version
):
    import_lines(sample_lines(with_ids=False))
    assert deepspeed_rows()[0].github_id is None

    run = sync(make_source("deepspeedai/DeepSpeed"))

    assert run.status == SyncRun.Status.DONE
    assert run.counts.get("created", 0) == 0 and run.counts["unchanged"] == 15
    assert Issue.objects.count() == 45
    [deepspeed] = deepspeed_rows()
    assert deepspeed.full_name == "microsoft/DeepSpeed" and deepspeed.github_id == DEEPSPEED_ID
    assert deepspeed.renamed_to == "deepspeedai/DeepSpeed"
    assert Source.objects.get().repository == deepspeed
    # The redirect of the former name was asked once; the next sync asks nothing of it.
    assert any(status == 301 for _, _, status in renamed_github.requests)
    renamed_github.reset_log()
    sync(Source.objects.get())
    assert not any("/repos/microsoft/" in path for path in renamed_github.paths_requested())
    assert len(systems_of_a_study_of_everything(codebook_version)) == 3


def test_an_import_meets_a_synced_repository_by_its_id_and_keeps_the_old_name_as_alias(
    renamed_github, make_source, sync
):
    sync(make_source("deepspeedai/DeepSpeed"))
    [synced] = deepspeed_rows()
    assert synced.full_name == "deepspeedai/DeepSpeed"

    report = import_lines(sample_lines())

    assert report.errors == []
    assert Issue.objects.count() == 45
    assert deepspeed_rows() == [synced]
    [alias] = RepositoryAlias.objects.filter(repository=synced)
    assert alias.full_name == "microsoft/DeepSpeed"
    # The alias is a name of the repository from now on: an import line without an id, and a
    # source added under the old name, both land on it.
    line = sample_lines(with_ids=False, only="microsoft/DeepSpeed")[0]
    line.update(number=99_001, id=99_001, updated_at="2026-01-01T00:00:00Z")
    assert import_lines([line]).created == 1
    assert Issue.objects.get(number=99_001).repository == synced
    assert source_create(repository="MICROSOFT/deepspeed", state="all").repository == synced
    assert deepspeed_rows() == [synced]


def doubled_deepspeed(make_source) -> Source:
    """The state the old demo and sync left: the sample's row without an id (its issues in the
    study) and the synced row with the id, each holding the same 15 issues, the synced copies
    newer and holding the comments (comment ids are unique, so the sync took them over)."""
    Repository.objects.filter(name="DeepSpeed").update(github_id=None)
    synced = sample_lines(with_ids=False, only="microsoft/DeepSpeed")
    for line in synced:
        line.update(repository="deepspeedai/DeepSpeed", updated_at="2026-01-01T00:00:00Z")
        line["title"] = f"{line['title']} (as synced)"
    import_lines(synced)
    Repository.objects.filter(owner="deepspeedai").update(github_id=DEEPSPEED_ID)
    assert Issue.objects.count() == 60 and len(deepspeed_rows()) == 2
    return make_source("deepspeedai/DeepSpeed")


def assert_one_deepspeed_with_the_studys_issue_rows(study, items: dict, comments: int) -> None:
    assert Issue.objects.count() == 45
    [deepspeed] = deepspeed_rows()
    assert (deepspeed.full_name, deepspeed.github_id) == ("microsoft/DeepSpeed", DEEPSPEED_ID)
    assert deepspeed.renamed_to == "deepspeedai/DeepSpeed"
    assert dict(StudyItem.objects.filter(study=study).values_list("id", "issue_id")) == items
    assert IssueComment.objects.count() == comments
    assert Source.objects.get().repository == deepspeed
    # The study's copy of each issue holds the newer text and the thread of both copies.
    issue = Issue.objects.get(repository=deepspeed, number=7061)
    assert issue.title.endswith("(as synced)")
    expected = sample_lines(only="microsoft/DeepSpeed")[0]["comments_data"]
    assert issue.comments.count() == len(expected) > 0
    item = StudyItem.objects.get(study=study, issue=issue)
    assert item.changed_upstream_at is None  # nobody labeled it yet


def test_rows_already_doubled_are_merged_when_an_import_names_the_id(
    renamed_github, make_source, study
):
    doubled_deepspeed(make_source)
    items = dict(StudyItem.objects.filter(study=study).values_list("id", "issue_id"))
    comments = IssueComment.objects.count()

    report = import_lines(sample_lines(only="microsoft/DeepSpeed"))

    assert report.errors == [] and report.unchanged == 15
    assert_one_deepspeed_with_the_studys_issue_rows(study, items, comments)


def test_rows_already_doubled_are_merged_by_the_next_sync(renamed_github, make_source, sync, study):
    source = doubled_deepspeed(make_source)
    items = dict(StudyItem.objects.filter(study=study).values_list("id", "issue_id"))
    comments = IssueComment.objects.count()

    run = sync(source)

    assert run.status == SyncRun.Status.DONE, run.error
    assert_one_deepspeed_with_the_studys_issue_rows(study, items, comments)


def test_a_merge_that_would_drop_labeled_copies_is_refused_and_changes_nothing(
    renamed_github, codebook_version, make_source, study
):
    doubled_deepspeed(make_source)
    # A second study took the synced copies: both copies of each issue are items of a study.
    study_create(
        slug="second",
        name="Second",
        codebook_version=codebook_version,
        k=1,
        issues=list(Issue.objects.filter(repository__owner="deepspeedai")),
    )

    report = import_lines(sample_lines(only="microsoft/DeepSpeed"))

    assert report.created == report.unchanged == 0 and len(report.errors) == 15
    message = report.errors[0][1]
    assert "study" in message and "deepspeedai/DeepSpeed" in message, message
    assert Issue.objects.count() == 60 and len(deepspeed_rows()) == 2


def test_an_import_line_whose_id_contradicts_the_stored_name_is_refused(sample_issues):
    line = sample_lines(only="huggingface/transformers")[0]
    line.update(repository_id=1, number=99_002, id=99_002)
    other = sample_lines(only="NVIDIA/Megatron-LM")[0]
    other.update(number=99_003, id=99_003)

    report = import_lines([line, other])

    assert report.created == 1
    [(place, message)] = report.errors
    assert place == 1 and "huggingface/transformers" in message and "1" in message
    assert not Issue.objects.filter(number=99_002).exists()
    assert Repository.objects.get(name="transformers").github_id != 1


def test_a_repository_id_of_the_wrong_type_is_a_line_error(db):
    line = sample_lines(only="huggingface/transformers")[0]
    line["repository_id"] = "155220641"

    report = import_lines([line])

    assert report.created == 0
    assert "repository_id must be an integer" in report.errors[0][1]


def test_the_api_shape_of_the_repository_carries_its_id(db):
    line = sample_lines(with_ids=False, only="huggingface/transformers")[0]
    line["repository"] = {"id": 155220641, "full_name": "huggingface/transformers"}

    assert import_lines([line]).errors == []

    assert Repository.objects.get().github_id == 155220641


def test_the_stand_in_serves_the_samples_ids(sample_github):
    with GitHubClient(sample_github.base_url) as client:
        assert client.repository(*OLD).github_id == DEEPSPEED_ID
        assert client.repository("NVIDIA", "Megatron-LM").github_id != DEEPSPEED_ID
