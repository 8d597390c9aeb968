#!/bin/sh
# Runs once, when the database is first initialised (mounted into /docker-entrypoint-initdb.d, which the official
# mysql image and agensh's MariaDB image both run): the routers' own database and user, so that no router holds the
# root password. Env: MYSQL_ROOT_PASSWORD, MYSQL_ROUTER_USER (also its database), MYSQL_ROUTER_PASSWORD.
set -eu
for value in "$MYSQL_ROUTER_USER" "$MYSQL_ROUTER_PASSWORD"; do
  case "$value" in "" | *[!A-Za-z0-9_-]*) echo "agensh: router user and password must be letters, digits, - or _" >&2; exit 1 ;; esac
done
client=$(command -v mariadb || command -v mysql)
MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$client" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS \`$MYSQL_ROUTER_USER\`;
CREATE USER IF NOT EXISTS '$MYSQL_ROUTER_USER'@'%' IDENTIFIED BY '$MYSQL_ROUTER_PASSWORD';
GRANT ALL PRIVILEGES ON \`$MYSQL_ROUTER_USER\`.* TO '$MYSQL_ROUTER_USER'@'%';
FLUSH PRIVILEGES;
SQL
echo "agensh: database user $MYSQL_ROUTER_USER for the routers"
