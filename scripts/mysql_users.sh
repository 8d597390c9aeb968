#!/bin/sh
# Runs once, when the database is first initialised (mounted into /docker-entrypoint-initdb.d, which the official
# mysql image and agensh's MariaDB image both run): each platform service's own database and user, holding privileges
# on that database only, so that no service but Gitea holds the root password. Env: MYSQL_ROOT_PASSWORD,
# MYSQL_SERVICE_USERS (user names, each also its database's) and, for each name N, MYSQL_<N in capitals>_PASSWORD.
set -eu
client=$(command -v mariadb || command -v mysql)
for user in $MYSQL_SERVICE_USERS; do
  password=$(printenv "MYSQL_$(echo "$user" | tr '[:lower:]' '[:upper:]')_PASSWORD" || true)
  for value in "$user" "$password"; do
    case "$value" in "" | *[!A-Za-z0-9_-]*) echo "agensh: database user $user: names and passwords must be letters, digits, - or _" >&2; exit 1 ;; esac
  done
  MYSQL_PWD="$MYSQL_ROOT_PASSWORD" "$client" -uroot <<SQL
CREATE DATABASE IF NOT EXISTS \`$user\` CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$user'@'%' IDENTIFIED BY '$password';
GRANT ALL PRIVILEGES ON \`$user\`.* TO '$user'@'%';
FLUSH PRIVILEGES;
SQL
  echo "agensh: database user $user"
done
