import pytest

from tests.openai_server import FakeOpenAI


@pytest.fixture
def endpoint():
    with FakeOpenAI() as stand_in:
        yield stand_in


@pytest.fixture(autouse=True)
def quick_retries(settings):
    """Backoff in hundredths of a second. The client waits long enough that a busy machine's
    slow answer is not taken for a timeout (the tests count requests); the test of timeouts
    shortens the wait itself."""
    settings.MACHINES_BACKOFF_SECONDS = 0.01
    settings.MACHINES_MAX_WAIT_SECONDS = 0.2
    settings.MACHINES_REQUEST_TIMEOUT = 30.0
    settings.MACHINES_MAX_ATTEMPTS = 4
