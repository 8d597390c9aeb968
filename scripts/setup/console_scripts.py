"""The console commands of pyproject.toml's [project.scripts] (`agensh`), written into the venv's bin/ as pip writes
them for an installed project: this venv does not install the project, it names the checkout instead
(agensh-project.pth, scripts/setup/setup.sh), so nothing else would. Run by `make setup`; idempotent."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from model.project import ROOT


def script(target: str, python: str) -> str:
    """A console script calling `module:function` with the venv's interpreter, its return value the exit code."""
    module, function = target.split(":")
    return f"#!{python}\nimport sys\n\nfrom {module} import {function}\n\nsys.exit({function}())\n"


def write(bin_dir: Path, python: str) -> list[str]:
    """Each command's script in bin_dir, unless it is already there as it would be written; the ones written."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    written = []
    for name, target in scripts.items():
        path, text = bin_dir / name, script(target, python)
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
            path.chmod(0o755)
            written.append(name)
    return written


def main() -> int:
    bin_dir = Path(sys.executable).parent  # the venv's bin/, as sys.executable is the venv's interpreter
    written = write(bin_dir, sys.executable)
    print(f"    {bin_dir}: " + (f"wrote {', '.join(written)}" if written else "console commands in place"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
