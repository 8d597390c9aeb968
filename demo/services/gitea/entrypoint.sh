#!/bin/bash
# The Gitea container's entrypoint (real Gitea; agensh's image, see ../README.md). Starts as root only to hand the
# host-mounted /data to the `git` user (Gitea refuses to run as root), then, as git: applies the container's
# GITEA__<section>__<KEY> variables to app.ini, migrates the database (waiting for it), creates the administrator
# GITEA_ADMIN_USER (default pbench-admin) with GITEA_ADMIN_PASSWORD when it does not exist yet, and runs `gitea web`.
set -euo pipefail
CONF="$GITEA_CUSTOM/conf/app.ini"
ADMIN="${GITEA_ADMIN_USER:-pbench-admin}"
: "${GITEA_ADMIN_PASSWORD:?the administrator password GITEA_ADMIN_PASSWORD is required}"
say() { echo "agensh-gitea: $*"; }
as_git() { setpriv --reuid=git --regid=git --init-groups "$@"; }

mkdir -p "$GITEA_CUSTOM/conf" /data/git/repositories
for dir in "$GITEA_CUSTOM" /data/git; do  # only when needed: a large data folder is not walked on every start
  [ "$(stat -c %U "$dir")" = git ] || chown -R git:git "$dir"
done
if [ ! -f "$CONF" ]; then
  install -o git -g git -m 600 /opt/gitea/app.ini "$CONF"
  GITEA__security__SECRET_KEY="$(as_git gitea generate secret SECRET_KEY)"
  GITEA__security__INTERNAL_TOKEN="$(as_git gitea generate secret INTERNAL_TOKEN)"
  export GITEA__security__SECRET_KEY GITEA__security__INTERNAL_TOKEN
  say "first start: wrote $CONF"
fi
as_git gitea config edit-ini --in-place --apply-env --config "$CONF"
unset GITEA__security__SECRET_KEY GITEA__security__INTERNAL_TOKEN GITEA__database__PASSWD

log="$GITEA_CUSTOM/log/agensh-migrate.log"
as_git mkdir -p "$(dirname "$log")"
for attempt in $(seq 1 20); do  # the database may still be starting; Gitea itself retries within an attempt too
  if as_git gitea migrate >"$log" 2>&1; then break; fi
  if [ "$attempt" = 20 ]; then tail -20 "$log" >&2; say "database migration failed"; exit 1; fi
  say "database not ready (attempt $attempt), retrying"
  sleep 3
done

if ! as_git gitea admin user list --admin | awk 'NR > 1 {print $2}' | grep -qxF "$ADMIN"; then
  # The password reaches the CLI as an argument (Gitea has no other way): inside this container, once.
  as_git gitea admin user create --admin --username "$ADMIN" --email "$ADMIN@agensh.local" \
    --password "$GITEA_ADMIN_PASSWORD" --must-change-password=false >/dev/null
  say "created the administrator $ADMIN"
fi
unset GITEA_ADMIN_PASSWORD
say "starting gitea web"
exec setpriv --reuid=git --regid=git --init-groups gitea web
