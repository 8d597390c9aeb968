#!/usr/bin/env bash
# The documented preview and launch of a stack (make preview, make up, make demo, a scheduled launch): the launcher is
# scripts/cli/launch.py; this only runs it with the project's interpreter, from the project.
#
#   launch.sh preview STACK [pulumi args]
#   launch.sh up STACK [--yes] [--foreground] [pulumi args]
set -euo pipefail
cd "$(dirname "$0")/../.."
exec .venv/bin/python -m scripts.cli launch "$@"
