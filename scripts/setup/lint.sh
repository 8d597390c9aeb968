#!/usr/bin/env bash
# Lint, format and types, with the settings in pyproject.toml: `make lint` alone, and first in `make test`.
set -uo pipefail
cd "$(dirname "$0")/../.."
rc=0
t0=$(date +%s)
.venv/bin/ruff check --quiet . || { echo "lint: ruff check failed (fix, or .venv/bin/ruff check --fix .)" >&2; rc=1; }
.venv/bin/ruff format --check --quiet . || { echo "lint: not formatted (run .venv/bin/ruff format .)" >&2; rc=1; }
.venv/bin/mypy || { echo "lint: mypy found type errors" >&2; rc=1; }
echo "lint: ruff check, ruff format --check, mypy: $([ $rc -eq 0 ] && echo clean || echo FAILED) in $(( $(date +%s) - t0 )) s"
exit $rc
