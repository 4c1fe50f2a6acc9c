"""Invitations: a manager makes an expiring, single-use link for a role; whoever opens it sets a
username and a password (Django's validators) and lands in the study with the role."""

import re
from datetime import timedelta

import pytest
from django.core import mail
from django.utils import timezone
from rest_framework.test import APIClient

from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.models import Invitation, Membership, StudyEvent
from labeling.services.invitations import (
    INVITATIONS_PER_HOUR,
    invitation_accept,
    invitation_create,
    invitation_revoke,
)
from labeling.services.lifecycle import StudyClosedError, study_close
from tests.conftest import PASSWORD
from tests.smtp_server import FakeSMTP


def test_only_a_manager_invites_and_the_token_is_stored_hashed(study, people):
    with pytest.raises(PermissionDeniedError):
        invitation_create(study=study, by=people["annotator1"], role="annotator")
    with pytest.raises(ApplicationError, match="role is one of"):
        invitation_create(study=study, by=people["manager"], role="owner")
    new = invitation_create(study=study, by=people["manager"], role="adjudicator")
    assert new.token not in new.invitation.token_hash and len(new.invitation.token_hash) == 64
    assert not new.mailed
    assert StudyEvent.objects.get(study=study).action == "invited"


def test_accepting_makes_a_member_once(study, people):
    new = invitation_create(study=study, by=people["manager"], role="annotator")
    with pytest.raises(ApplicationError, match=r"too short|too common|similar"):
        invitation_accept(token=new.token, username="newcomer", password="abc")
    assert not Invitation.objects.filter(accepted_at__isnull=False).exists()
    user, joined = invitation_accept(
        token=new.token, username="newcomer", password=PASSWORD, first_name="Ada"
    )
    assert joined == study and user.first_name == "Ada" and user.check_password(PASSWORD)
    assert Membership.objects.filter(study=study, user=user, role="annotator").exists()
    assert user.assignments.exists()  # an annotator gets their share at once
    with pytest.raises(ApplicationError, match="used already"):
        invitation_accept(token=new.token, username="second", password=PASSWORD)
    with pytest.raises(ApplicationError, match="not valid"):
        invitation_accept(token="forged", username="third", password=PASSWORD)
    actions = set(StudyEvent.objects.filter(study=study).values_list("action", flat=True))
    assert {"invited", "member_added", "invitation_accepted"} <= actions


def test_expired_revoked_and_closed(study, people):
    expired = invitation_create(study=study, by=people["manager"], role="manager")
    Invitation.objects.filter(pk=expired.invitation.pk).update(
        expires_at=timezone.now() - timedelta(minutes=1)
    )
    with pytest.raises(ApplicationError, match="expired"):
        invitation_accept(token=expired.token, username="late", password=PASSWORD)
    revoked = invitation_create(study=study, by=people["manager"], role="manager")
    invitation_revoke(invitation=revoked.invitation, by=people["manager"])
    with pytest.raises(ApplicationError, match="withdrawn"):
        invitation_accept(token=revoked.token, username="gone", password=PASSWORD)
    closed = invitation_create(study=study, by=people["manager"], role="annotator")
    study_close(study=study, user=people["manager"], reason="done")
    with pytest.raises(StudyClosedError):
        invitation_accept(token=closed.token, username="toolate", password=PASSWORD)
    assert not Invitation.objects.filter(accepted_at__isnull=False).exists()


def test_a_manager_makes_a_limited_number_an_hour(study, people):
    Invitation.objects.bulk_create(
        [
            Invitation(
                study=study,
                role="annotator",
                token_hash=f"{n:064d}",
                created_by=people["manager"],
                expires_at=timezone.now() + timedelta(days=1),
            )
            for n in range(INVITATIONS_PER_HOUR)
        ]
    )
    with pytest.raises(ApplicationError, match="an hour"):
        invitation_create(study=study, by=people["manager"], role="annotator")


def test_the_link_is_mailed_over_smtp_when_mail_is_configured(
    client, study, people, settings, django_capture_on_commit_callbacks
):
    with FakeSMTP() as server:
        settings.EMAIL_URL = f"smtp://127.0.0.1:{server.port}"
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        client.force_login(people["manager"])
        with django_capture_on_commit_callbacks(execute=True):
            page = client.post(
                "/studies/demo/invitations/",
                {"action": "invite", "role": "annotator", "email": "ada@lab.example.org"},
            )
        assert "It was mailed to ada@lab.example.org" in page.text
        [message] = server.messages
    assert message["To"] == "ada@lab.example.org"
    text = message.get_body(("plain",)).get_content()
    path = re.search(r"http://testserver(/invitations/[^/\s]+/)", text)[1]
    client.logout()
    assert "Join Demo" in client.get(path).text


def test_pages_invite_accept_and_land_in_the_study(client, study, people):
    client.force_login(people["manager"])
    page = client.post("/studies/demo/invitations/", {"action": "invite", "role": "adjudicator"})
    assert page.status_code == 200
    link = re.search(r'value="(http://testserver/invitations/[^"]+/)"', page.text).group(1)
    assert "pending" in page.text
    client.logout()
    path = link.removeprefix("http://testserver")
    assert "Join Demo" in client.get(path).text
    response = client.post(
        path,
        {"username": "newcomer", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302 and response.url == "/studies/demo/"
    assert "adjudicator" in client.get("/studies/demo/").text
    client.logout()
    used = client.get(path)
    assert used.status_code == 410 and "used already" in used.text
    assert client.get("/invitations/not-a-token/").status_code == 410


def test_account_page_changes_the_name(client, people):
    client.force_login(people["annotator1"])
    response = client.post("/account/", {"first_name": "Grace", "last_name": "Hopper"})
    assert response.status_code == 302
    people["annotator1"].refresh_from_db()
    assert people["annotator1"].get_full_name() == "Grace Hopper"


def test_api_invites_lists_revokes_and_accepts(study, people):
    api = APIClient()
    api.force_login(people["manager"])
    made = api.post("/api/studies/demo/invitations/", {"role": "annotator"}, format="json")
    assert made.status_code == 201
    body = made.json()
    assert body["state"] == "pending" and body["link"].endswith(f"/invitations/{body['token']}/")
    listed = api.get("/api/studies/demo/invitations/").json()["results"]
    assert [row["id"] for row in listed] == [body["id"]] and "token" not in listed[0]
    anonymous = APIClient()
    accepted = anonymous.post(
        "/api/invitations/accept/",
        {"token": body["token"], "username": "viaapi", "password": PASSWORD},
        format="json",
    )
    assert accepted.status_code == 201 and accepted.json() == {
        "username": "viaapi",
        "study": "demo",
        "role": "annotator",
    }
    second = api.post("/api/studies/demo/invitations/", {"role": "manager"}, format="json")
    revoked = api.delete(f"/api/studies/demo/invitations/{second.json()['id']}/")
    assert revoked.status_code == 204
    assert mail.outbox == []


def test_api_account_name(people):
    api = APIClient()
    api.force_login(people["annotator1"])
    response = api.patch("/api/account/", {"first_name": "Grace"}, format="json")
    assert response.status_code == 200 and response.json()["first_name"] == "Grace"
    refused = api.patch("/api/account/", {"last_name": "\u202eevil"}, format="json")
    assert refused.status_code == 400


def test_a_signed_in_account_joins_with_the_link(client, study, people):
    """Someone with an account (a password or a single sign-on one) joins as they are: the
    page offers to join as them, the API does the same, once; a role held already is refused
    and leaves the invitation for someone else."""
    outsider = people["outsider"]
    new = invitation_create(study=study, by=people["manager"], role="adjudicator")
    client.force_login(outsider)
    page = client.get(f"/invitations/{new.token}/")
    assert "Join as outsider" in page.text and "Choose a username" not in page.text
    response = client.post(f"/invitations/{new.token}/")
    assert response.status_code == 302 and response.url == "/studies/demo/"
    assert Membership.objects.filter(study=study, user=outsider, role="adjudicator").exists()
    assert Invitation.objects.get(pk=new.invitation.pk).accepted_by == outsider
    assert client.get(f"/invitations/{new.token}/").status_code == 410

    again = invitation_create(study=study, by=people["manager"], role="adjudicator")
    refused = client.post(f"/invitations/{again.token}/")
    assert refused.status_code == 400 and "already" in refused.text
    assert Invitation.objects.get(pk=again.invitation.pk).accepted_at is None

    api = APIClient()
    api.force_login(people["annotator2"])
    joined = api.post("/api/invitations/join/", {"token": again.token}, format="json")
    assert joined.status_code == 200
    assert joined.json() == {"username": "annotator2", "study": "demo", "role": "adjudicator"}
    used = api.post("/api/invitations/join/", {"token": again.token}, format="json")
    assert used.status_code == 400 and used.json()["error"]["details"]["state"] == "accepted"
    anonymous = APIClient().post("/api/invitations/join/", {"token": again.token}, format="json")
    assert anonymous.status_code == 401
