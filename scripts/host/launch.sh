#!/usr/bin/env bash
# The documented launch and preview of a stack, with the policy pack (which reads the stack's own numbers,
# stacks/<stack>.policy.json, by itself). Run with scripts/env.sh sourced, from the project.
#
#   launch.sh preview STACK [pulumi args]   the preview alone (make preview)
#   launch.sh up STACK [pulumi args]        the preview, then the update (make up, make demo, a scheduled launch)
#
# The preview runs under scripts/setup/preview.env: a preview writes no state, so it skips the engine's checkpoint
# after every step (a full rewrite of the state each time, quadratic in the stack's size; docs/performance.md) and
# the pack still sees the whole stack before anything exists. The update then runs with checkpoints, so a killed
# `up` resumes, and `--skip-preview`, so the engine does not preview a second time the slow way; the pack's resource
# rules run again on every resource it creates. Without --yes, and on a terminal, it asks before the update.
#
# A per-task profile (`agensh:stacks: per-task`, model/parts.py) runs as several stacks: scripts/cli/launch.py
# previews the whole of it and updates its parts in order. The one-stack launch stays here, needing only bash and the
# toolchain (a scheduled launch's host).
set -euo pipefail
usage() { echo "usage: $0 preview|up STACK [pulumi args]" >&2; exit 2; }
[ $# -ge 2 ] || usage
mode=$1 stack=$2
shift 2
[[ $mode == preview || $mode == up ]] || usage
[[ $stack =~ ^[A-Za-z0-9][A-Za-z0-9_.-]*$ ]] || { echo "launch: not a stack name: '$stack'" >&2; exit 2; }
cd "$(dirname "$0")/../.."
# the launch names the pack on each command; scripts/env.sh's PULUMI_OPTION_POLICY_PACK would attach it twice
# (scripts/cli/launch.py does the same)
unset PULUMI_OPTION_POLICY_PACK
if grep -Eq "^[[:space:]]*agensh:stacks:[[:space:]]*[\"']?per-task" "stacks/Pulumi.$stack.yaml" 2>/dev/null; then
  exec .venv/bin/python -m scripts.cli launch "$mode" "$stack" "$@"
fi
pack=(--policy-pack policies)
yes=0 rest=()
for arg in "$@"; do
  case $arg in
    --yes | -y) yes=1 ;;
    --skip-preview) echo "launch: the launch always previews first (that is where the policy pack sees the stack)" >&2; exit 2 ;;
    *) rest+=("$arg") ;;
  esac
done

(
  set -a
  . scripts/setup/preview.env
  set +a
  exec pulumi preview -s "$stack" "${pack[@]}" "${rest[@]}"
)
[ "$mode" = up ] || exit 0
if [ "$yes" = 0 ]; then
  if [ ! -t 0 ]; then
    echo "launch: not on a terminal; pass --yes to perform the update" >&2
    exit 2
  fi
  read -r -p "Do you want to perform this update? [y/N] " answer
  [[ $answer == [yY]* ]] || { echo "launch: nothing changed" >&2; exit 1; }
fi
exec pulumi up --yes --skip-preview -s "$stack" "${pack[@]}" "${rest[@]}"
