"""profile_data: the profile's data directory, created first and removed by `pulumi destroy`.

`create` makes `<data root>/<profile>`; `delete` removes it (and the profile's untagged images left by
rebuilds), but refuses when a task's shutdown archives are incomplete (inspect them first; AGENSH_FORCE_CLEAN=1
overrides). `make down` never calls this: it keeps data.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping

from components import contract
from components.records import ShutdownResult, read_receipt
from components.rundir import ProfileDir
from components.step_inputs import ProfileDataInputs
from scripts.step import load_inputs


def incomplete_archives(pd: ProfileDir) -> list[str]:
    """Tasks whose shutdown left archives missing or corrupt."""
    out = []
    for receipt_path in pd.path.glob("*/*/receipts/shutdown.json"):
        rd = pd.run(receipt_path.parents[2].name)
        receipt = read_receipt(rd, "shutdown", receipt_path.parents[1].name)
        if receipt and isinstance(receipt.result, ShutdownResult) and not receipt.result.archives_complete:
            out.append(str(receipt_path))
    return out


def main(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> int:
    mode = (argv if argv is not None else sys.argv[1:])[0]
    a = load_inputs(ProfileDataInputs, env)
    pd = ProfileDir(Path(a.profile_dir))
    if mode == "create":
        pd.path.mkdir(parents=True, exist_ok=True)
        print(f'{{"profile_dir": "{pd.path}"}}')
        return 0
    incomplete = incomplete_archives(pd)
    if incomplete and env.get("AGENSH_FORCE_CLEAN") != "1":
        print(f"profile_data: refusing to delete {pd.path}: incomplete shutdown archives in {incomplete}; inspect "
              "them, then destroy with AGENSH_FORCE_CLEAN=1", file=sys.stderr)
        return 1
    shutil.rmtree(pd.path, ignore_errors=True)
    # Images replaced by rebuilds during the stack's life are left untagged; they still carry the profile label.
    subprocess.run(["docker", "image", "prune", "-f", "--filter", contract.profile_filter(a.profile)], capture_output=True)
    print(f'{{"removed": "{pd.path}"}}')
    return 0


if __name__ == "__main__":
    sys.exit(main())
