"""The README describes what the code does now, in a page a newcomer reads in two minutes."""

import re
from pathlib import Path

from django.core.management import get_commands

from labeling.management.commands.demo import DEMO_ACCOUNTS

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"


def test_the_readme_speaks_of_the_dataset_export_as_there():
    text = " ".join(README.read_text().split())
    assert "export_dataset" in get_commands() and "manage.py export_dataset" in text
    assert not re.search(r"dataset export (comes next|will)", text)


def test_the_readme_is_short():
    assert len(README.read_text().splitlines()) <= 150


def test_the_readme_gives_the_two_commands_the_makefile_has():
    text = README.read_text()
    makefile = (ROOT / "Makefile").read_text()
    for target in ("run", "test", "docs", "docs-reference"):
        assert f"make {target}" in text, target
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), target


def test_the_readme_names_the_demo_accounts_as_the_demo_makes_them():
    text = README.read_text()
    for username, password, _ in DEMO_ACCOUNTS:
        assert f"| `{username}` | `{password}` |" in text, username


def test_every_command_the_readme_runs_exists():
    text = README.read_text()
    named = set(re.findall(r"manage\.py (\w+)", text))
    assert named and named <= set(get_commands()), named - set(get_commands())


def test_every_relative_link_and_image_of_the_readme_exists():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [target for target in targets if not re.match(r"[a-z]+:", target)]
    assert "docs/img/labeling.png" in local
    missing = [target for target in local if not (ROOT / target).exists()]
    assert not missing, missing
