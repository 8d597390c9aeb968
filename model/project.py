"""Where the project is: its root, found once from this file's place, so no other module counts its own parents.

The modules are found by their package names from the root: the Pulumi program and the step programs run from it
(`python -m scripts.<program>`), and `make setup` names it in the venv (`agensh-project.pth`) for the processes that
start elsewhere, such as the policy pack, which the engine runs in `policies/`.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
# The demo's stand-in Agensh checkout and the sources of its real service images (Gitea, MariaDB), relative to a
# project: to this one (ROOT / DEMO_CHECKOUT) or to a copy of it (scripts/lab/sandbox.py).
DEMO_CHECKOUT = Path("demo", "checkout")
DEMO_SERVICES = Path("demo", "services")
