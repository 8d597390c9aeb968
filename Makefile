# The two front-door commands. Both set the machine up first (idempotent; see scripts/setup.sh).
SHELL := /bin/bash
.PHONY: setup test demo demo-destroy down preview

setup:
	@bash scripts/setup.sh

test: setup
	@. scripts/env.sh && bash scripts/run-tests.sh

demo: setup
	@. scripts/env.sh && bash scripts/demo.sh

demo-destroy:
	@. scripts/env.sh && pulumi destroy --yes --skip-preview -s demo

down:
	@test -n "$(PROFILE)" || { echo "usage: make down PROFILE=<profile>"; exit 2; }
	@bash scripts/down.sh "$(PROFILE)"

# A preview persists nothing, so it skips the engine's per-step checkpoint (a full serialisation of the state after
# every resource: quadratic in the stack's size; README "Performance"). Never set this for up or destroy.
preview:
	@test -n "$(PROFILE)" || { echo "usage: make preview PROFILE=<profile>"; exit 2; }
	@. scripts/env.sh && PULUMI_SKIP_CHECKPOINTS=true pulumi preview -s "$(PROFILE)" --policy-pack policies
