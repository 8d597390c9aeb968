#!/usr/bin/env bash
# make demo: the whole pipeline offline as the stack "demo" (a rehearsal: stand-in Agensh services and Mattermost,
# a scripted stand-in model; the real GitHub Copilot CLI in each worker, the real Gitea and MariaDB, real Docker,
# the real Pulumi engine, the real `programbench eval`). Run after `make setup` with scripts/env.sh sourced. Re-running it after a finished demo
# changes nothing; `make demo-destroy` cleans up.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$ROOT"
PY=.venv/bin/python
STACK=demo
t0=$(date +%s)
say() { echo "demo: [$(( $(date +%s) - t0 ))s] $*"; }

say "local base image (Debian rootfs via debootstrap, cached)"
bash scripts/setup/base_image.sh
say "images: the real Gitea (built once from its Go module, cached) and MariaDB, the Copilot CLI, the stand-ins, the calculator cleanroom, test blobs"
"$PY" -m scripts.setup.demo_images
if [ -d /run/systemd/system ]; then
  host_units=local
else
  host_units=off
  say "host units skipped: this machine does not run systemd (pbench.slice and the reboot guard need it)"
fi
say "profile stack '$STACK' (stand-in model token generated once, kept in the stack's encrypted config)"
if ! pulumi config get -s "$STACK" agensh:llm_upstream_token >/dev/null 2>&1; then
  export LLM_UPSTREAM_TOKEN="standin-$(head -c 18 /dev/urandom | base64 | tr -dc 'a-zA-Z0-9')"
fi
[ -f "stacks/$STACK.policy.json" ] || cp policies/demo.json "stacks/$STACK.policy.json"  # the demo's relaxations
"$PY" -m scripts.cli new-stack "$STACK" --from stacks/demo.profile.yaml --env-file none --set "host_units=$host_units"
say "pulumi up -s $STACK: the policy pack checks the preview before anything changes (the task's budget is 3 minutes)"
bash scripts/host/launch.sh up "$STACK" --yes --foreground
run_dir="$(pulumi stack output -s "$STACK" run_dir)"
say "done. Run directory: $run_dir"
echo "--- score (ProgramBench's own helpers) ---"
cat "$run_dir"/*/score.json
echo "--- pulumi stack output provenance ---"
pulumi stack output -s "$STACK" provenance --json
echo "This was a rehearsal: every worker ran the real GitHub Copilot CLI in an ACP session, but the model was a"
echo "scripted stand-in (and Mattermost and the Agensh services stand-ins; Gitea and MariaDB real): no model reasoned."
echo "Clean up with: make demo-destroy"
