"""deploy/install.py hands uv the settings pip would use on the machine, read from `pip config
list`: PIP_* variables first, then the [install] and [global] sections of pip's files."""

from deploy.install import pip_settings, uv_arguments

LISTING = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.find-links='/opt/wheels'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/more/simple'
global.find-links='/ignored/by/the/variable'
global.index-url='https://global.example/simple'
install.index-url='https://install.example/simple'
install.no-index='false'
"""


def test_pip_settings_take_variables_over_install_over_global():
    settings = pip_settings(LISTING)

    assert settings["find-links"] == "/opt/wheels"
    assert settings["index-url"] == "https://install.example/simple"
    assert settings["constraint"] == "/etc/pip/constraints.txt"


def test_uv_gets_every_index_the_constraints_and_the_certificate():
    arguments, environment = uv_arguments(pip_settings(LISTING))

    pairs = list(zip(arguments[::2], arguments[1::2], strict=False))
    assert ("--index-url", "https://install.example/simple") in pairs
    assert ("--extra-index-url", "file:///opt/pypi/simple") in pairs
    assert ("--extra-index-url", "file:///opt/more/simple") in pairs
    assert ("--find-links", "/opt/wheels") in pairs
    assert ("--constraint", "/etc/pip/constraints.txt") in pairs
    # pip weighs every index; uv must too, or a pin found only on a later index is missed.
    assert ("--index-strategy", "unsafe-best-match") in pairs
    assert "--no-index" not in arguments
    assert environment == {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_HTTP_TIMEOUT": "180",
    }


def test_no_index_is_passed_on():
    arguments, _ = uv_arguments(pip_settings("global.no-index='true'\n"))

    assert "--no-index" in arguments
