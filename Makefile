# The two front-door commands. Both set the machine up first (idempotent; see scripts/setup/setup.sh).
SHELL := /bin/bash
.PHONY: setup test test-fast lint faults demo demo-destroy destroy down check preview up stop logs schedule status

setup:
	@bash scripts/setup/setup.sh

test: setup
	@. scripts/env.sh && bash scripts/setup/run-tests.sh

# The everyday loop: lint, types, and the pure-model and component tiers (no Docker, no engine), in well under 3 minutes
test-fast: setup
	@bash scripts/setup/lint.sh && .venv/bin/python -m pytest tests/unit tests/components -q

# ruff (lint, format) and mypy alone, with the settings in pyproject.toml (`make test` runs them first)
lint: setup
	@bash scripts/setup/lint.sh

# The whole fault matrix (scripts/lab/faults.py; not in `make test`, which runs its cheap cells): ~5 min per cell,
# JOBS cells at once
faults: setup
	@. scripts/env.sh && .venv/bin/python -m scripts.lab.faults $(if $(CELLS),--cells $(CELLS)) $(if $(BESIDE),--beside) \
		$(if $(JOBS),--jobs $(JOBS))

demo: setup
	@. scripts/env.sh && bash scripts/setup/demo.sh

demo-destroy:
	@. scripts/env.sh && .venv/bin/python -m scripts.cli destroy demo --yes

# A profile's stacks destroyed in reverse launch order (scripts/cli/destroy.py); refuses while a result lacks its copy
destroy:
	@test -n "$(STACK)" || { echo "usage: make destroy STACK=<stack>"; exit 2; }
	@. scripts/env.sh && .venv/bin/python -m scripts.cli destroy "$(STACK)"

down:
	@test -n "$(PROFILE)" || { echo "usage: make down PROFILE=<profile>"; exit 2; }
	@bash scripts/host/down.sh "$(PROFILE)"

# Every live check of a profile alone (scripts/cli/check.py): images, model, blobs, subnets, ports, host units;
# nothing is left running and the stack's state is not touched
check:
	@test -n "$(STACK)" || { echo "usage: make check STACK=<stack>"; exit 2; }
	@. scripts/env.sh && .venv/bin/python -m scripts.cli check "$(STACK)"

# The documented preview and launch (scripts/cli/launch.py): the policy pack, with the stack's own numbers
# (stacks/<stack>.policy.json), checks a preview of the whole stack before anything changes; the preview runs with
# scripts/setup/preview.env (a preview writes no state), the update with the engine's checkpoints. `make up` asks on
# this terminal, then runs the launch detached from it (FOREGROUND=1 keeps it here); stop and logs find it.
preview:
	@test -n "$(STACK)" || { echo "usage: make preview STACK=<stack>"; exit 2; }
	@. scripts/env.sh && bash scripts/host/launch.sh preview "$(STACK)" $(ARGS)

up:
	@test -n "$(STACK)" || { echo "usage: make up STACK=<stack>"; exit 2; }
	@. scripts/env.sh && bash scripts/host/launch.sh up "$(STACK)" $(if $(FOREGROUND),--foreground) $(ARGS)

stop:
	@test -n "$(STACK)" || { echo "usage: make stop STACK=<stack>"; exit 2; }
	@. scripts/env.sh && bash scripts/host/launch.sh stop "$(STACK)"

logs:
	@test -n "$(STACK)" || { echo "usage: make logs STACK=<stack>"; exit 2; }
	@. scripts/env.sh && bash scripts/host/launch.sh logs "$(STACK)"

# A delayed launch at the stack's agensh:start_at (systemd service + timer): ACTION=install (default), remove, status.
schedule:
	@test -n "$(STACK)" || { echo "usage: make schedule STACK=<stack> [ACTION=install|remove|status]"; exit 2; }
	@.venv/bin/python -m scripts.cli schedule $(or $(ACTION),install) "$(STACK)"

status:
	@test -n "$(STACK)" || { echo "usage: make status STACK=<stack>"; exit 2; }
	@.venv/bin/python -m scripts.cli status "$(STACK)"
