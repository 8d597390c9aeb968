#!/usr/bin/env bash
# What the service of a scheduled launch runs (scripts/cli/schedule.py installs agensh-launch-<stack>.service and .timer):
# it records when the launch began (AGENSH_LAUNCH_RECORD, the run directory's launch.json; the run manifest copies
# it), then runs the documented launch (scripts/host/launch.sh: the preview with the policy pack, then `pulumi up`).
# The unit sets every variable: AGENSH_STACK, AGENSH_START_AT (the timer's UTC time), AGENSH_LAUNCH_RECORD,
# AGENSH_LAUNCH_UNIT, and the Pulumi settings (PULUMI_CONFIG_PASSPHRASE_FILE: a path, never the passphrase).
set -euo pipefail
: "${AGENSH_STACK:?}" "${AGENSH_START_AT:?}" "${AGENSH_LAUNCH_RECORD:?}" "${AGENSH_LAUNCH_UNIT:?}"
started=$(date -u +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$(dirname "$AGENSH_LAUNCH_RECORD")"
printf '{"stack": "%s", "unit": "%s", "host": "%s", "scheduled": "%s", "started": "%s"}\n' "$AGENSH_STACK" \
  "$AGENSH_LAUNCH_UNIT" "$(uname -n)" "$AGENSH_START_AT" "$started" >"$AGENSH_LAUNCH_RECORD.tmp"
mv "$AGENSH_LAUNCH_RECORD.tmp" "$AGENSH_LAUNCH_RECORD"
echo "agensh: launch of stack $AGENSH_STACK, scheduled for $AGENSH_START_AT, began at $started"

cd "$(dirname "$0")/.."
. scripts/env.sh
exec bash scripts/host/launch.sh up "$AGENSH_STACK" --yes --non-interactive
