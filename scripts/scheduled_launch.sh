#!/usr/bin/env bash
# What the service of a scheduled launch runs (scripts/cli/schedule.py installs agensh-launch-<stack>.service and
# .timer): the documented launch in the foreground of this service (scripts/host/launch.sh: the preview with the
# policy pack, then `pulumi up`), which records when it began (the run directory's launch.json; the run manifest
# copies it). The unit sets every variable: AGENSH_STACK, AGENSH_START_AT (the timer's UTC time),
# AGENSH_LAUNCH_UNIT, and the Pulumi settings (PULUMI_CONFIG_PASSPHRASE_FILE: a path, never the passphrase).
set -euo pipefail
: "${AGENSH_STACK:?}" "${AGENSH_START_AT:?}" "${AGENSH_LAUNCH_UNIT:?}"
cd "$(dirname "$0")/.."
. scripts/env.sh
exec bash scripts/host/launch.sh up "$AGENSH_STACK" --yes --foreground --non-interactive
