import pytest

from tests.openai_server import FakeOpenAI


@pytest.fixture
def endpoint():
    with FakeOpenAI() as stand_in:
        yield stand_in


@pytest.fixture(autouse=True)
def quick_retries(settings):
    """Backoff in hundredths of a second, and a client that gives up on a held answer soon."""
    settings.MACHINES_BACKOFF_SECONDS = 0.01
    settings.MACHINES_MAX_WAIT_SECONDS = 0.2
    settings.MACHINES_REQUEST_TIMEOUT = 1.5
    settings.MACHINES_MAX_ATTEMPTS = 4
