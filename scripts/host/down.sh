#!/usr/bin/env bash
# make down PROFILE=<profile>: stop every running container of a profile and keep all data (volumes, run
# directories, stack state). Start again with `pulumi up --refresh -s <stack>`; `pulumi destroy` deletes.
set -euo pipefail
profile="${1:?usage: down.sh PROFILE}"
ids="$(docker ps -q --filter "label=agensh.profile=$profile")"
if [ -z "$ids" ]; then echo "down: no running containers of profile $profile"; exit 0; fi
echo "down: stopping $(echo "$ids" | wc -l) containers of profile $profile (data kept)"
docker stop -t 30 $ids >/dev/null
