#!/usr/bin/env bash
# Docker shim for `programbench eval`: export PROGRAMBENCH_DOCKER_EXECUTABLE=/path/to/this script.
# Every call goes to `docker` unchanged, except `docker run` (programbench starts each compile/test
# container with `docker run -d --init --name programbench-<id> -w /workspace --cpus N
# -e PYTEST_XDIST_AUTO_NUM_WORKERS=N -e PYTEST_ADDOPTS=--max-worker-restart=4 --init IMAGE sleep 2h`
# and then only uses exec/cp/commit/stop/rm/rmi). For `run` it:
#   - adds --memory ${PBENCH_EVAL_MEMORY:-16g} (and the same --memory-swap, i.e. no extra swap),
#   - appends ${PBENCH_EVAL_PYTEST_ADDOPTS} to the value of the `-e PYTEST_ADDOPTS=...` argument,
#   - adds --label agensh.role=pbench-eval plus ${PBENCH_EVAL_LABEL} if set (e.g. agensh.test=pbeval),
#   - adds --network ${PBENCH_EVAL_NETWORK} if set (e.g. none, or an --internal network),
#   - caps --cpus at the host's CPU count (programbench defaults to 10; Docker rejects more than the host has).
# Env: PBENCH_DOCKER (real docker binary, default docker).
set -euo pipefail
DOCKER="${PBENCH_DOCKER:-docker}"
[ "${1:-}" = run ] || exec "$DOCKER" "$@"
shift

ncpu="$(nproc)"
args=(run --memory "${PBENCH_EVAL_MEMORY:-16g}" --memory-swap "${PBENCH_EVAL_MEMORY:-16g}"
  --label agensh.role=pbench-eval)
[ -z "${PBENCH_EVAL_LABEL:-}" ] || args+=(--label "$PBENCH_EVAL_LABEL")
[ -z "${PBENCH_EVAL_NETWORK:-}" ] || args+=(--network "$PBENCH_EVAL_NETWORK")
prev=""
for a in "$@"; do
  if [ "$prev" = -e ] && [[ "$a" == PYTEST_ADDOPTS=* ]] && [ -n "${PBENCH_EVAL_PYTEST_ADDOPTS:-}" ]; then
    a="$a $PBENCH_EVAL_PYTEST_ADDOPTS"
  elif [ "$prev" = --cpus ] && awk -v c="$a" -v n="$ncpu" 'BEGIN { exit !(c > n) }'; then
    a="$ncpu"
  fi
  args+=("$a"); prev="$a"
done
exec "$DOCKER" "${args[@]}"
