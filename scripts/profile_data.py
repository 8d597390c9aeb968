"""profile_data: the profile's data directory, created first and removed by `pulumi destroy`.

`create` makes `<data root>/<profile>`; `delete` removes it (and the profile's untagged images left by
rebuilds), but refuses when a task's shutdown archives are
incomplete (inspect them first; AGENSH_FORCE_CLEAN=1 overrides). `make down` never calls this: it keeps data.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Mapping


def main(argv: list[str] | None = None, env: Mapping[str, str] = os.environ) -> int:
    mode = (argv if argv is not None else sys.argv[1:])[0]
    root = Path(json.loads(env["AGENSH_INPUT"])["profile_dir"])
    if mode == "create":
        root.mkdir(parents=True, exist_ok=True)
        print(json.dumps({"profile_dir": str(root)}))
        return 0
    incomplete = [str(r) for r in root.glob("*/*/receipts/shutdown.json")
                  if not json.loads(r.read_text()).get("archives_complete", True)]
    if incomplete and env.get("AGENSH_FORCE_CLEAN") != "1":
        print(f"profile_data: refusing to delete {root}: incomplete shutdown archives in {incomplete}; inspect them, "
              "then destroy with AGENSH_FORCE_CLEAN=1", file=sys.stderr)
        return 1
    shutil.rmtree(root, ignore_errors=True)
    # Images replaced by rebuilds during the stack's life are left untagged; they still carry the profile label.
    profile = json.loads(env["AGENSH_INPUT"]).get("profile")
    if profile:
        subprocess.run(["docker", "image", "prune", "-f", "--filter", f"label=agensh.profile={profile}"],
                       capture_output=True)
    print(json.dumps({"removed": str(root)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
