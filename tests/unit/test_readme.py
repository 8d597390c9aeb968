"""The README's settings table is the model's own (regenerate with scripts/settings_table.py)."""

from pathlib import Path

from scripts.settings_table import table


def test_readme_lists_every_setting():
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert table() in readme
