#!/usr/bin/env bash
# Every test tier: unit (pure model), components (Pulumi mocks), scripts (real Docker, real ProgramBench),
# integration (real pulumi against the real engine), after the lint, format and type checks (scripts/setup/lint.sh).
# Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/../.."
# `make test` has just set the machine up, so a tier whose tools are absent fails here instead of skipping
export CI="${CI:-true}"
# each test attaches the policy pack itself where it checks it (scripts/env.sh attaches it to every command)
unset PULUMI_OPTION_POLICY_PACK
bash scripts/setup/lint.sh || exit 1
# the lab host's Docker Engine 29 (tests/integration/test_docker29.py), cached by version: minutes once per machine,
# built here rather than beside the tests it would slow
bash scripts/setup/docker29.sh >/dev/null || exit 1
# The tests run side by side in TEST_JOBS processes (pytest-xdist): most of a whole-pipeline test's time is waiting
# (for a task's budget, a deadline, a node), so more processes than cores keep the cores busy; three keep the 2-core
# reference machine busy (docs/performance.md: with four, a swarm stack's `up` once failed under the load). A module's
# tests that share a module-scoped fixture run in one process, and the longest start first (tests/conftest.py).
.venv/bin/python -m pytest tests -n "${TEST_JOBS:-3}" --dist loadgroup --no-loadscope-reorder --durations=30 "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "run-tests: pytest collected no tests; that is a failure here" >&2
fi
exit "$rc"
