#!/bin/sh
# pbench reboot guard: after a reboot, stop every running container of an `omcgitea-*` Compose project.
# Data (volumes, bind mounts) is kept. It does not check whether a driver is still alive.
# PBENCH_GUARD_DRY_RUN=1 lists what it would stop and stops nothing.
set -eu
docker ps --filter label=com.docker.compose.project \
  --format '{{.ID}} {{.Label "com.docker.compose.project"}} {{.Names}}' |
while read -r id project name; do
  case "$project" in
    omcgitea-*)
      if [ "${PBENCH_GUARD_DRY_RUN:-0}" = 1 ]; then
        echo "would stop $name ($project)"
      else
        echo "stopping $name ($project)"
        docker stop "$id" >/dev/null
      fi ;;
  esac
done
