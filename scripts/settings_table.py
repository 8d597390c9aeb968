"""Print the profile settings as a Markdown table (name, default, meaning) for the README."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic_core import PydanticUndefined  # noqa: E402

from components.profile import Profile  # noqa: E402


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


if __name__ == "__main__":
    print(table())
