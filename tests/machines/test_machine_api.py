"""Starting a machine run over the API: managers only, the settings checked as the command
checks them, the run queued once the request commits."""

from rest_framework.test import APIClient

from machines.models import MachineRun


def _post(user, data):
    client = APIClient()
    client.force_login(user)
    return client.post("/api/studies/demo/machines/", data, format="json")


def test_a_manager_queues_a_run(study, people, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = _post(
            people["manager"],
            {"base_url": "http://127.0.0.1:9/v1", "model": "m", "samples": 3, "seed": 1},
        )
    assert response.status_code == 202, response.content
    run = MachineRun.objects.get()
    assert response.json()["id"] == run.pk and run.status == MachineRun.Status.QUEUED
    assert run.annotator.samples == 3 and run.annotator.created_by == people["manager"]
    assert len(callbacks) == 1  # the task is sent after commit


def test_bad_settings_are_a_400_naming_the_field(study, people):
    key_itself = "-".join(["sk", "live", "123"])  # a key where its variable's name belongs
    response = _post(
        people["manager"],
        {"base_url": "http://127.0.0.1:9/v1", "model": "m", "api_key_env": key_itself},
    )
    assert response.status_code == 400
    assert "api_key_env" in response.json()["error"]["details"]
    assert not MachineRun.objects.exists()


def test_only_managers_start_runs(study, people):
    data = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    assert _post(people["annotator1"], data).status_code == 403
    assert _post(people["adjudicator"], data).status_code == 403
    assert _post(people["outsider"], data).status_code == 404
    assert not MachineRun.objects.exists()
