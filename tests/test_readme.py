"""The README describes what the code does now."""

import re
from pathlib import Path

from django.core.management import get_commands

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_speaks_of_the_dataset_export_as_there():
    text = " ".join(README.read_text().split())
    assert "export_dataset" in get_commands() and "manage.py export_dataset" in text
    assert not re.search(r"dataset export (comes next|will)", text)
