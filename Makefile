# The two front-door commands. Both set the machine up first (idempotent; see scripts/setup/setup.sh).
SHELL := /bin/bash
.PHONY: setup test lint faults demo demo-destroy down preview up schedule status

setup:
	@bash scripts/setup/setup.sh

test: setup
	@. scripts/env.sh && bash scripts/setup/run-tests.sh

# ruff (lint, format) and mypy alone, with the settings in pyproject.toml (`make test` runs them first)
lint: setup
	@bash scripts/setup/lint.sh

# The whole fault matrix (scripts/lab/faults.py; not in `make test`, which runs its cheap cells): ~5 min per cell
faults: setup
	@. scripts/env.sh && .venv/bin/python -m scripts.lab.faults $(if $(CELLS),--cells $(CELLS))

demo: setup
	@. scripts/env.sh && bash scripts/setup/demo.sh

demo-destroy:
	@. scripts/env.sh && pulumi destroy --yes --skip-preview -s demo

down:
	@test -n "$(PROFILE)" || { echo "usage: make down PROFILE=<profile>"; exit 2; }
	@bash scripts/host/down.sh "$(PROFILE)"

# The documented launch: the policy pack (with the stack's own numbers, stacks/<stack>.policy.json) checks the preview
# before anything changes.
PACK = --policy-pack policies $(if $(wildcard stacks/$(STACK).policy.json),--policy-pack-config stacks/$(STACK).policy.json)

# A preview runs with scripts/setup/preview.env: no per-step checkpoint, fewer Go garbage collections, no provider plan
# (docs/performance.md).
preview:
	@test -n "$(STACK)" || { echo "usage: make preview STACK=<stack>"; exit 2; }
	@. scripts/env.sh && set -a && . scripts/setup/preview.env && set +a && pulumi preview -s "$(STACK)" $(PACK)

up:
	@test -n "$(STACK)" || { echo "usage: make up STACK=<stack>"; exit 2; }
	@. scripts/env.sh && pulumi up -s "$(STACK)" $(PACK)

# A delayed launch at the stack's agensh:start_at (systemd service + timer): ACTION=install (default), remove, status.
schedule:
	@test -n "$(STACK)" || { echo "usage: make schedule STACK=<stack> [ACTION=install|remove|status]"; exit 2; }
	@.venv/bin/python -m scripts.cli schedule $(or $(ACTION),install) "$(STACK)"

status:
	@test -n "$(STACK)" || { echo "usage: make status STACK=<stack>"; exit 2; }
	@.venv/bin/python -m scripts.cli status "$(STACK)"
