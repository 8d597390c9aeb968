#!/bin/bash
# The MySQL container's entrypoint (real MariaDB from Debian; agensh's image, see ../README.md). The project runs it
# as `mysqld --max-connections=N` with MYSQL_ROOT_PASSWORD and the data at /var/lib/mysql. On the first start it
# initialises the data folder: root (from any host) with MYSQL_ROOT_PASSWORD, the database MYSQL_DATABASE when set
# (as the official mysql image does; the project sets `gitea`) and `healthcheck`@127.0.0.1 without privileges
# (mysqladmin's user, see agensh.cnf, so that health checks are not logged as denied logins); then, as the official
# image does, the *.sh scripts in /docker-entrypoint-initdb.d (the project's gives the routers and Mattermost their own users). Then it runs the server with the given options. Any other command runs as given.
set -euo pipefail
DATA=/var/lib/mysql
DONE="$DATA/.agensh-initialised"
BUSY="$DATA/.agensh-initialising"
say() { echo "agensh-mariadb: $*"; }
case "${1:-}" in mysqld | mariadbd) shift ;; *) exec "$@" ;; esac

mkdir -p /run/mysqld "$DATA"
chown mysql:mysql /run/mysqld

if [ ! -e "$DONE" ]; then
  : "${MYSQL_ROOT_PASSWORD:?MYSQL_ROOT_PASSWORD is required to initialise $DATA}"
  db="${MYSQL_DATABASE:-}"
  if [ -n "$db" ] && ! [[ "$db" =~ ^[A-Za-z0-9_]{1,64}$ ]]; then
    say "MYSQL_DATABASE must be 1-64 letters, digits or _, got: $db" >&2
    exit 1
  fi
  if [ -n "$(ls -A "$DATA")" ] && [ ! -e "$BUSY" ]; then
    say "$DATA holds data this image did not initialise; refusing to touch it" >&2
    exit 1
  fi
  find "$DATA" -mindepth 1 -delete  # empty, or what an interrupted first start left behind
  touch "$BUSY"
  chown mysql:mysql "$DATA"
  say "first start: initialising $DATA"
  mariadb-install-db --user=mysql --datadir="$DATA" --skip-test-db --auth-root-authentication-method=socket \
    >/tmp/install-db.log 2>&1 || { cat /tmp/install-db.log >&2; exit 1; }
  sock=/run/mysqld/mysqld.sock  # the default: init scripts reach it as the official image lets them
  mariadbd --datadir="$DATA" --skip-networking --socket="$sock" &
  pid=$!
  for _ in $(seq 1 60); do mariadb-admin --socket="$sock" --user=root ping >/dev/null 2>&1 && break; sleep 1; done
  pw="${MYSQL_ROOT_PASSWORD//\\/\\\\}"
  pw="${pw//\'/\\\'}"
  create_db="${db:+CREATE DATABASE IF NOT EXISTS \`$db\` CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;}"
  # The password goes through stdin, never an argument.
  mariadb --socket="$sock" -uroot <<SQL
ALTER USER 'root'@'localhost' IDENTIFIED VIA unix_socket OR mysql_native_password USING PASSWORD('$pw');
CREATE USER 'root'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;
CREATE USER 'healthcheck'@'127.0.0.1';
$create_db
FLUSH PRIVILEGES;
SQL
  # as the official mysql image does: the init scripts mounted into /docker-entrypoint-initdb.d, once
  for script in /docker-entrypoint-initdb.d/*.sh; do
    [ -f "$script" ] || continue
    say "running $script"
    sh "$script"
  done
  kill "$pid"
  wait "$pid" || true
  rm -f "$BUSY"
  touch "$DONE"
  say "initialised: root@'%'${db:+ and the database $db}"
fi
[ "$(stat -c %U "$DATA")" = mysql ] || chown -R mysql:mysql "$DATA"  # a data folder moved here from elsewhere
say "starting mariadbd $*"
exec mariadbd "$@"
