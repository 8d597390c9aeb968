"""The settings table of docs/profiles.md is the model's own
(regenerate with `.venv/bin/python -m scripts.cli settings --update docs/profiles.md`)."""

from model.project import ROOT
from scripts.cli.settings_table import table


def test_profiles_doc_lists_every_setting():
    doc = (ROOT / "docs" / "profiles.md").read_text()
    assert table() in doc
