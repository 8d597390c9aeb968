"""The settings table of docs/profiles.md is the model's own
(regenerate with `.venv/bin/python -m scripts.cli settings --update docs/profiles.md`)."""

from pathlib import Path

try:
    from scripts.cli.settings_table import table
except ImportError:  # before the operator CLIs moved under scripts/cli
    from scripts.cli.settings_table import table


def test_profiles_doc_lists_every_setting():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "profiles.md").read_text()
    assert table() in doc
