"""The pure model imports no Pulumi: the step programs, the operator tools and the policy pack use it without the
SDK, and nothing in it can register a resource."""

import subprocess
import sys

from model.project import ROOT


def test_the_model_imports_no_pulumi():
    modules = sorted(p.stem for p in (ROOT / "model").glob("*.py") if p.stem != "__init__")
    code = (
        "import sys; "
        + "; ".join(f"import model.{m}" for m in modules)
        + "; bad = sorted(m for m in sys.modules if m == 'pulumi' or m.startswith(('pulumi.', 'pulumi_')));"
        + " print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(modules) >= 12
