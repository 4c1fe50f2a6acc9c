"""No secret in the repository: every file git tracks is scanned by detect-secrets (its
detectors of keys, tokens and high-entropy strings, run offline) and by a short list of our own
patterns; no .env or key file is tracked and git ignores them; settings, the compose file and
.env.example hold no password, only references to the environment.

That production has no default SECRET_KEY and refuses to start without a real one is checked
by tests/config/test_settings.py (test_production_refuses_to_start_without_a_secret_key).

A file that holds a fake secret on purpose (a test's password) is allowed below by its path,
the kind of finding and the reason; a single line can instead carry detect-secrets' own marker
`# pragma: allowlist secret`.
"""

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from detect_secrets import SecretsCollection
from detect_secrets.settings import default_settings
from django.conf import settings

from tests.conftest import require_service

ROOT = Path(settings.BASE_DIR)
FIXTURE_USERS = "the password of the users the tests make, in test databases only"
# path -> {kind of finding (detect-secrets' type, or one of PATTERNS): why it is no secret}
ALLOWED: dict[str, dict[str, str]] = {
    "tests/conftest.py": {"Secret Keyword": FIXTURE_USERS},
    "tests/browser/conftest.py": {"Secret Keyword": FIXTURE_USERS},
    "tests/ingest/test_interfaces.py": {"Secret Keyword": FIXTURE_USERS},
    "tests/labeling/test_labeling_flow.py": {"Secret Keyword": FIXTURE_USERS},
    "tests/labeling/test_labeling_rules.py": {"Secret Keyword": FIXTURE_USERS},
    "tests/security/test_login_lockout.py": {
        "Secret Keyword": FIXTURE_USERS + ", and the wrong one the lockout test tries"
    },
    "tests/config/test_settings.py": {
        "Secret Keyword": "a made-up SECRET_KEY that the production settings accept"
    },
    "tests/api/test_tokens.py": {
        "Hex High Entropy String": "a made-up API key of the old format (counting digits)"
    },
    "tests/ingest/test_github_client.py": {
        "Hex High Entropy String": "commit SHAs of the stand-in GitHub server's fixtures"
    },
    "bench/load.py": {
        "Secret Keyword": "the password of the load benchmark's users, in its throwaway database"
    },
    "bench/speed.py": {
        "Secret Keyword": "the password of the speed benchmark's manager, in its throwaway database"
    },
    "bench/peers.py": {
        "Secret Keyword": "the password of the peer benchmark's users, in their throwaway databases"
    },
    "tests/web/test_sso.py": {
        "Secret Keyword": "made-up client secrets of single sign-on providers (none is called)"
    },
    "tests/test_access_matrix.py": {
        "Secret Keyword": "made-up client secrets of single sign-on providers (none is called)"
    },
    "tests/security/test_no_secrets.py": {
        "Base64 High Entropy String": "the made-up token planted to prove that the checks work"
    },
}
# Ours, beside the scanner's: explicit, and GitHub's fine-grained tokens too.
PATTERNS = {
    "a private key block": re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----"),
    "a GitHub token": re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"),
    "an AWS access key id": re.compile(
        r"\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"
    ),
    "an AWS secret access key": re.compile(
        r"(?i)aws_?secret_?access_?key\W{1,4}[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
    ),
}
# Fakes built at run time, so that this file holds none of them.
PLANTED = {
    "a private key block": "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD9\n",
    "a GitHub token": "gh" + "p_" + "Zx8Kq2Lm4Nv6Bw1Cr3Ts5Yu7Ie9Oa0Pd2Fg4H",
    "an AWS access key id": "AKIA" + "Z7Q3LX2M9KD4PW8R",
}
NEVER_TRACKED = re.compile(
    r"(^|/)(\.env(\.(?!example$)[^/]+)?|id_(rsa|dsa|ecdsa|ed25519)|[^/]+\.(pem|key|p12|pfx|dump))$"
)
# Names of settings and variables that hold a secret (not PASSWORD_HASHERS and the like).
SECRET_NAME = re.compile(
    r"(?i)(?:^|_)(?:password|passwd|secret|secret_key|token|api_key|private_key|access_key)$"
)
ENVIRONMENT_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:?-][^}]*)?\}$")
URL_PASSWORD = re.compile(r"://[^/\s:@]+:([^@/]+)@")


@pytest.fixture(scope="module")
def tracked() -> list[str]:
    """The files of `git ls-files`: what a commit would publish."""
    git = shutil.which("git")
    inside = bool(git) and (
        subprocess.run(
            [git, "rev-parse", "--is-inside-work-tree"], cwd=ROOT, capture_output=True
        ).returncode
        == 0
    )
    require_service(inside, "A git checkout", "run this test in a clone of the repository")
    listing = subprocess.run(
        [git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    return [name for name in listing.split("\0") if name and (ROOT / name).is_file()]


def test_no_env_key_or_dump_file_is_tracked(tracked):
    assert [name for name in tracked if NEVER_TRACKED.search(name)] == []
    assert ".env.example" in tracked  # the template stays, with empty values (below)


@pytest.mark.parametrize("path", [".env", "backups/issuecoder-20250101T000000Z/database.dump"])
def test_git_ignores_env_files_and_backups(tracked, path):
    result = subprocess.run(["git", "check-ignore", "--quiet", path], cwd=ROOT)
    assert result.returncode == 0, f"{path} is not in .gitignore"


def test_no_private_key_token_or_cloud_key_in_tracked_files(tracked):
    found = []
    for name in tracked:
        text = (ROOT / name).read_text(errors="replace")
        for kind, pattern in PATTERNS.items():
            for match in pattern.finditer(text):
                if kind not in ALLOWED.get(name, {}):
                    # Where and what, never the value itself.
                    found.append(f"{name}:{text.count(chr(10), 0, match.start()) + 1}: {kind}")
    assert found == []


def test_the_scanner_finds_no_secret_outside_the_allowed_files(tracked):
    findings = SecretsCollection(root=str(ROOT))
    with default_settings():
        findings.scan_files(*tracked, num_processors=2)
    found = sorted(
        f"{name}:{secret.line_number}: {secret.type}"
        for name, secret in findings
        if secret.type not in ALLOWED.get(name, {})
    )
    assert found == [], (
        "Possible secrets in tracked files. Remove them (and rotate any real one), or, for a "
        "fake one in a test, add its path, kind and reason to ALLOWED in this file:\n"
        + "\n".join(found)
    )


@pytest.mark.parametrize("kind", PLANTED)
def test_the_patterns_and_the_scanner_find_a_planted_secret(kind, tmp_path):
    """The checks above are worth something only if they find a secret when there is one."""
    planted = tmp_path / "settings.py"
    planted.write_text(f'VALUE = "{PLANTED[kind]}"\n')
    assert PATTERNS[kind].search(planted.read_text())
    findings = SecretsCollection(root=str(tmp_path))
    with default_settings():
        findings.scan_file("settings.py")
    assert [secret.line_number for _, secret in findings] != []


def test_the_compose_file_passes_passwords_by_reference_only():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    found = []
    for place, name, value in _environment_entries(compose, "docker-compose.yml"):
        value = "" if value is None else str(value)  # no value: passed on from the host
        if SECRET_NAME.search(name) and value and not ENVIRONMENT_REFERENCE.match(value):
            found.append(f"{place}: {name} is not a ${{VARIABLE}} reference")
        for password in URL_PASSWORD.findall(value):
            if not ENVIRONMENT_REFERENCE.match(password):
                found.append(f"{place}: {name} holds a password in its URL")
    assert found == []


def test_env_example_leaves_every_secret_empty():
    found = []
    for number, line in enumerate((ROOT / ".env.example").read_text().splitlines(), 1):
        name, sign, value = line.partition("=")
        assigned = sign and not name.lstrip().startswith("#")
        if assigned and SECRET_NAME.search(name.strip()) and value.strip():
            found.append(f".env.example:{number}: {name} has a value")
        if URL_PASSWORD.search(line):
            found.append(f".env.example:{number}: a URL with a password")
    assert found == []


def test_settings_take_secrets_from_the_environment():
    """No password, token or key literal in the settings. Only the local and test settings may
    default SECRET_KEY, to values whose prefix the production settings refuse."""
    found = []
    for path in sorted((ROOT / "config" / "settings").glob("*.py")):
        module = ast.parse(path.read_text(), filename=str(path))
        throwaway_prefix = {"local.py": "local-", "test.py": "test-"}.get(path.name)
        for node in ast.walk(module):
            if isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [target.id for target in targets if isinstance(target, ast.Name)]
                if not any(SECRET_NAME.search(name) for name in names):
                    continue
                for literal in _string_literals(node.value):
                    if literal and not (throwaway_prefix and literal.startswith(throwaway_prefix)):
                        found.append(f"{path.name}:{node.lineno}: {', '.join(names)}")
            if isinstance(node, ast.Constant) and URL_PASSWORD.search(str(node.value)):
                found.append(f"{path.name}:{node.lineno}: a URL with a password")
    assert found == []


def _string_literals(node: ast.AST) -> list[str]:
    return [
        child.value
        for child in ast.walk(node)
        if isinstance(child, ast.Constant)
        and isinstance(child.value, str)
        # The names of environment variables are no secrets: env("SECRET_KEY", default=...).
        and not (isinstance(node, ast.Call) and child in node.args[:1])
    ]


def _environment_entries(node, place: str):
    """(place, name, value) of every `environment:` entry of the compose file, map or list."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "environment" and isinstance(value, dict):
                yield from ((f"{place}.environment", k, v) for k, v in value.items())
            elif key == "environment" and isinstance(value, list):
                for entry in value:
                    name, _, assigned = str(entry).partition("=")
                    yield f"{place}.environment", name, assigned
            else:
                yield from _environment_entries(value, f"{place}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _environment_entries(value, f"{place}[{index}]")
