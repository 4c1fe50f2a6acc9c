"""A run's lease: two workers never run the same run at once. A worker finds a run leased to
another (unexpired) and leaves it; a lease nobody renewed expires, and the run is taken over
(a second delivery of its task) or resumed from the page."""

from datetime import timedelta

import pytest
from django.utils import timezone

from machines.models import MachineRun
from machines.runs import LeaseLost, _lease_renew, machine_run_execute
from machines.services import (
    machine_annotator_get_or_create,
    machine_run_is_resumable,
    machine_run_request,
)

N_ITEMS = 45


@pytest.fixture
def queued(study, endpoint):
    annotator, _ = machine_annotator_get_or_create(
        study=study, base_url=endpoint.base_url, model="stand-in"
    )
    return machine_run_request(annotator=annotator, enqueue=False)


def _leased(run: MachineRun, owner: str, *, seconds: float) -> None:
    MachineRun.objects.filter(pk=run.pk).update(
        status=MachineRun.Status.RUNNING,
        lease_owner=owner,
        lease_expires_at=timezone.now() + timedelta(seconds=seconds),
    )


def test_a_run_leased_to_another_worker_is_left_alone(queued, endpoint):
    _leased(queued, "worker-a", seconds=600)
    run = machine_run_execute(run_id=queued.pk, owner="worker-b")
    assert endpoint.request_count == 0
    assert (run.status, run.lease_owner, run.items_done) == ("running", "worker-a", 0)
    assert not machine_run_is_resumable(run)


def test_an_expired_lease_is_taken_over_and_released_at_the_end(queued, endpoint):
    _leased(queued, "worker-a", seconds=-1)  # its worker died
    assert machine_run_is_resumable(MachineRun.objects.get(pk=queued.pk))
    run = machine_run_execute(run_id=queued.pk, owner="worker-b")
    assert (run.status, run.items_done, endpoint.request_count) == ("finished", N_ITEMS, N_ITEMS)
    assert (run.lease_owner, run.lease_expires_at) == ("", None)


def test_the_holder_renews_its_lease_and_a_lost_lease_stops_it(queued, endpoint, settings):
    settings.MACHINES_LEASE_SECONDS = 60
    _leased(queued, "worker-a", seconds=1)
    before = MachineRun.objects.get(pk=queued.pk).lease_expires_at
    _lease_renew(queued, "worker-a")
    assert MachineRun.objects.get(pk=queued.pk).lease_expires_at > before + timedelta(seconds=30)
    with pytest.raises(LeaseLost):
        _lease_renew(queued, "worker-b")


def test_an_ended_run_is_never_run_again(queued, endpoint):
    first = machine_run_execute(run_id=queued.pk)
    again = machine_run_execute(run_id=queued.pk)
    assert first.status == again.status == "finished"
    assert endpoint.request_count == N_ITEMS
