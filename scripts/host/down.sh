#!/usr/bin/env bash
# make down PROFILE=<profile>: stop every running container of a profile and its tasks' deadline keepers, and keep all
# data (volumes, run directories, stack state). Start again with `pulumi up --refresh -s <stack>` (its export arms
# the keepers again); `pulumi destroy` deletes.
set -euo pipefail
profile="${1:?usage: down.sh PROFILE}"
[[ "$profile" =~ ^[a-z0-9][a-z0-9-]*$ ]] || { echo "down: not a profile name: $profile" >&2; exit 2; }
# a keeper's command line ends `-m scripts.export keep <profile>` (scripts/lib/freeze.py), in a service of its own or not
if pkill -f -- "-m scripts[.]export keep ${profile}\$"; then echo "down: stopped the deadline keepers of profile $profile"; fi
ids="$(docker ps -q --filter "label=agensh.profile=$profile")"
if [ -z "$ids" ]; then echo "down: no running containers of profile $profile"; exit 0; fi
echo "down: stopping $(echo "$ids" | wc -l) containers of profile $profile (data kept)"
docker stop -t 30 $ids >/dev/null
