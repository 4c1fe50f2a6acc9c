"""Password reset: the mail goes out through SMTP (the stand-in server of tests/smtp_server.py)
and its link sets a new password; more than PASSWORD_RESET_PER_HOUR requests for an address or
from a client send nothing more and answer the same page; without mail (production without
EMAIL_URL) the page says the reset is off and the login page does not offer it. The mail
settings come from EMAIL_URL; under the production settings (gunicorn) the counts are in Redis."""

import os
import re
import secrets
import subprocess
import sys

import pytest
from django.conf import settings as django_settings
from django.core.cache import cache

from tests.celery_worker import worker_database_url
from tests.conftest import require_postgres, require_service
from tests.faults.http_client import Browser
from tests.faults.servers import PrivateRedis, ProductionWeb
from tests.smtp_server import FakeSMTP

RESET = "/accounts/password_reset/"
LINK = re.compile(r"https?://testserver(/accounts/reset/[^/\s]+/[^/\s]+/)")


@pytest.fixture
def smtp(settings):
    with FakeSMTP() as server:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
        settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
        settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
        settings.DEFAULT_FROM_EMAIL = "IssueCoder <noreply@lab.example.org>"
        cache.clear()  # the counts of earlier tests
        yield server
    cache.clear()


@pytest.fixture
def ada(make_user):
    return make_user("ada", email="ada@lab.example.org")


def ask(client, email: str, address: str = "198.51.100.7"):
    return client.post(RESET, {"email": email}, REMOTE_ADDR=address)


def test_the_mail_arrives_over_smtp_and_its_link_sets_a_new_password(client, smtp, ada):
    answer = ask(client, "ADA@lab.example.org")

    assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    [message] = smtp.messages
    assert smtp.recipients == [["ada@lab.example.org"]]
    assert message["To"] == "ada@lab.example.org"
    assert message["From"] == "IssueCoder <noreply@lab.example.org>"
    assert message["Subject"] == "Reset your IssueCoder password"
    text = message.get_body(("plain",)).get_content()
    assert '"ada"' in text
    link = LINK.search(text)[1]

    form = client.get(link, follow=True)
    assert form.status_code == 200 and b'name="new_password1"' in form.content
    new_password = secrets.token_urlsafe(16)
    done = client.post(
        form.redirect_chain[-1][0], {"new_password1": new_password, "new_password2": new_password}
    )
    assert done.status_code == 302 and done["Location"] == "/accounts/reset/done/"
    assert client.login(username="ada", password=new_password)
    # The link works once.
    client.logout()
    again = client.get(link, follow=True)
    assert b'name="new_password1"' not in again.content


def test_over_the_limit_no_further_mail_and_the_same_page(client, smtp, ada, make_user, settings):
    settings.PASSWORD_RESET_PER_HOUR = 3
    make_user("grace", email="grace@lab.example.org")

    answers = [ask(client, "ada@lab.example.org") for _ in range(4)]

    assert len(smtp.messages) == 3
    assert {(answer.status_code, answer["Location"]) for answer in answers} == {
        (302, "/accounts/password_reset/done/")
    }
    # The address's limit holds from any client...
    ask(client, "ada@lab.example.org", address="203.0.113.9")
    assert len(smtp.messages) == 3
    # ...and the client's for any address; another client may still ask for another address.
    ask(client, "grace@lab.example.org")
    assert len(smtp.messages) == 3
    ask(client, "grace@lab.example.org", address="192.0.2.44")
    assert len(smtp.messages) == 4 and smtp.recipients[-1] == ["grace@lab.example.org"]


def test_an_unknown_address_gets_the_same_page_and_no_mail(client, smtp, ada):
    answer = ask(client, "nobody@lab.example.org")

    assert answer.status_code == 302 and answer["Location"] == "/accounts/password_reset/done/"
    assert smtp.messages == []


def test_without_mail_the_reset_is_off_and_not_offered(client, smtp, ada, settings):
    assert b"Forgot your password?" in client.get("/accounts/login/").content
    settings.PASSWORD_RESET_ENABLED = False

    page = client.get(RESET)
    sent = ask(client, "ada@lab.example.org")

    assert page.status_code == 200 and b"Password reset by email is off" in page.content
    assert b'name="email"' not in page.content
    assert sent.status_code == 200 and b"Password reset by email is off" in sent.content
    assert smtp.messages == []
    assert b"Forgot your password?" not in client.get("/accounts/login/").content


def settings_of(module: str, printed: str, **env: str) -> str:
    """What `print(<printed>)` shows under a settings module, with `env` as the only mail
    variables, in a process of its own."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in ("EMAIL_URL", "DEFAULT_FROM_EMAIL", "LOG_FORMAT")
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import django; django.setup(); from django.conf import settings; print({printed})",
        ],
        cwd=django_settings.BASE_DIR,
        env={
            **environment,
            "DJANGO_SETTINGS_MODULE": module,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "example.org",
            "REDIS_URL": "redis://127.0.0.1:6379/0",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


MAIL = (
    "settings.EMAIL_BACKEND, settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_USE_TLS, "
    "settings.EMAIL_HOST_USER, settings.DEFAULT_FROM_EMAIL, settings.PASSWORD_RESET_ENABLED"
)


def test_mail_settings_come_from_email_url():
    printed = settings_of(
        "config.settings.production",
        MAIL,
        EMAIL_URL="smtp+tls://lab-mailer@mail.example.org:587",
        DEFAULT_FROM_EMAIL="labeling@example.org",
    )
    assert printed == (
        "django.core.mail.backends.smtp.EmailBackend mail.example.org 587 True lab-mailer "
        "labeling@example.org True"
    )


def test_production_without_email_url_has_the_reset_off_and_local_prints_mails():
    assert settings_of("config.settings.production", MAIL).endswith(" False")
    assert settings_of("config.settings.local", "settings.EMAIL_BACKEND, "
                       "settings.PASSWORD_RESET_ENABLED") == (
        "django.core.mail.backends.console.EmailBackend True"
    )  # fmt: skip


@pytest.mark.django_db(transaction=True)
def test_under_the_production_settings_email_url_sends_and_redis_counts(make_user, tmp_path):
    require_postgres()
    require_service(PrivateRedis.available(), "redis-server", "install redis-server")
    make_user("ada", email="ada@lab.example.org")
    with FakeSMTP() as smtp, PrivateRedis() as redis_server:
        web = ProductionWeb(
            {
                "DATABASE_URL": worker_database_url(),
                "REDIS_URL": redis_server.url,
                "EMAIL_URL": f"smtp://127.0.0.1:{smtp.port}",
                "DEFAULT_FROM_EMAIL": "labeling@lab.example.org",
            },
            tmp_path / "web.log",
        )
        with web:
            browser = Browser(web.port)
            assert 'name="email"' in browser.request("GET", RESET).text
            answers = [
                browser.request("POST", RESET, form={"email": "ada@lab.example.org"})
                for _ in range(django_settings.PASSWORD_RESET_PER_HOUR + 1)
            ]
            assert {(answer.status, answer.headers["Location"]) for answer in answers} == {
                (302, "/accounts/password_reset/done/")
            }, web.logs()
            assert len(smtp.messages) == django_settings.PASSWORD_RESET_PER_HOUR
            assert smtp.messages[0]["From"] == "labeling@lab.example.org"
            text = smtp.messages[-1].get_body(("plain",)).get_content()
            link = re.search(r"https://localhost(/accounts/reset/[^/\s]+/[^/\s]+/)", text)[1]

            form = browser.request("GET", link)
            assert form.status == 302, form.text
            new_password = secrets.token_urlsafe(16)
            done = browser.request(
                "POST",
                form.headers["Location"],
                form={"new_password1": new_password, "new_password2": new_password},
            )
            assert done.status == 302 and done.headers["Location"] == "/accounts/reset/done/"
            assert Browser(web.port).login("ada", new_password).status == 302
