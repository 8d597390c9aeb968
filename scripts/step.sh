#!/usr/bin/env bash
# The one command a step resource's state names: `bash scripts/step.sh <step> [--delete]` (model/steps.py, LAUNCHER),
# run by the engine from the project (the resource's `dir`). It runs the step's program in the project's virtualenv
# (Pulumi.yaml's `virtualenv`, where the program itself runs) through the step table (scripts/dispatch.py). The
# interpreter and the programs can therefore move without changing any stack; this file's path is in every stack's
# state, so it stays where it is. It needs nothing from the caller's shell: a plain `pulumi up` runs it as well.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
exec "$root/.venv/bin/python" -m scripts.dispatch "$@"
