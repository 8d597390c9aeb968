"""Print the profile settings as a Markdown table (name, default, meaning).

`--update docs/profiles.md` rewrites the table in place (tests/unit/test_readme.py checks the file carries the
current one).
"""

from __future__ import annotations

from pathlib import Path

from pydantic_core import PydanticUndefined

from model.profile import Profile
from scripts.cli import options

cli = options.typer_app()


def table() -> str:
    rows = ["| setting (`agensh:`) | default | meaning |", "|---|---|---|"]
    for name, field in Profile.model_fields.items():
        if field.default is PydanticUndefined and field.default_factory is None:
            default = "required"
        else:
            value = field.get_default(call_default_factory=True)
            default = f"`{value}`" if value not in (None, "", {}) else "—"
        rows.append(f"| `{name}` | {default} | {field.description or ''} |")
    return "\n".join(rows)


def update(path: Path) -> None:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| setting (`agensh:`)"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))  # or the end
    path.write_text("\n".join(lines[:start] + table().splitlines() + lines[end:]) + "\n")


@cli.command()
def command(
    update_path: options.UpdateFile = None,
) -> int:
    if update_path is None:
        print(table())
    else:
        update(update_path)
    return 0
