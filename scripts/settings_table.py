"""Print the profile settings as a Markdown table (name, default, meaning); `--update README.md` rewrites
the table in place (tests/unit/test_readme.py checks the README carries the current one)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic_core import PydanticUndefined  # noqa: E402

from model.profile import Profile  # noqa: E402


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
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    path.write_text("\n".join(lines[:start] + table().splitlines() + lines[end:]) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--update"]:
        update(Path(sys.argv[2]))
    else:
        print(table())
