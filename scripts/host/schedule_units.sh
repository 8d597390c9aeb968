#!/bin/sh
# Install, remove or show a scheduled launch: <UNIT>.service and <UNIT>.timer (docs/requirements.md R31; scripts/cli/schedule.py).
#   sh -s install < (settings + this script)   settings: UNIT (agensh-launch-<stack>), SERVICE and TIMER (the unit
#                                              files), PASSPHRASE_FILE (the stack passphrase file the service reads)
#   sh -s remove  < (settings + this script)   settings: UNIT; leaves no unit file and no loaded unit behind
#   sh -s status  < (settings + this script)   settings: UNIT, RECORD (the run's launch.json); key=value lines
# The settings come as shell assignments on stdin before the script (scripts/cli/schedule.py), never through the
# environment (SSH refuses it without AcceptEnv) nor the command line (the host's process list shows it).
# Exit 3: refused, with the reason on stderr; nothing was changed.
set -eu
UNITS=${SYSTEMD_UNIT_DIR:-/etc/systemd/system}
: "${UNIT:?}"

refuse() { echo "$*" >&2; exit 3; }

launch_running() {
  case "$(systemctl show -p ActiveState --value "$UNIT.service" 2>/dev/null)" in
    active|activating|deactivating|reloading) return 0 ;;
  esac
  return 1
}

install() {
  : "${SERVICE:?}" "${TIMER:?}" "${PASSPHRASE_FILE:?}"
  host=$(uname -n)
  [ -d /run/systemd/system ] || refuse "$host does not run systemd; a scheduled launch needs a systemd timer"
  missing=""
  # a slice without a unit file still loads (with no memory limit): ask for its file
  [ -n "$(systemctl show -p FragmentPath --value pbench.slice 2>/dev/null)" ] || missing="pbench.slice is not installed"
  systemctl is-enabled --quiet pbench-reboot-guard.service 2>/dev/null ||
    missing="${missing:+$missing; }pbench-reboot-guard.service is not enabled"
  [ -z "$missing" ] || refuse "host units missing on $host: $missing. Install them first (docs/operations.md, \"Scheduling a launch\")"
  [ -f "$PASSPHRASE_FILE" ] || refuse "the stack passphrase file $PASSPHRASE_FILE is missing on $host"
  case "$(stat -c %a "$PASSPHRASE_FILE")" in
    *00) ;;
    *) refuse "the stack passphrase file $PASSPHRASE_FILE is readable by others on $host: chmod 600 $PASSPHRASE_FILE" ;;
  esac
  launch_running && refuse "$UNIT.service is running on $host (a launch in progress); it is left alone"
  systemctl stop "$UNIT.timer" 2>/dev/null || true
  printf '%s\n' "$SERVICE" >"$UNITS/$UNIT.service.tmp" && mv "$UNITS/$UNIT.service.tmp" "$UNITS/$UNIT.service"
  printf '%s\n' "$TIMER" >"$UNITS/$UNIT.timer.tmp" && mv "$UNITS/$UNIT.timer.tmp" "$UNITS/$UNIT.timer"
  systemctl daemon-reload
  systemctl reset-failed "$UNIT.service" 2>/dev/null || true
  systemctl enable --now --quiet "$UNIT.timer"
  next=$(systemctl show -p NextElapseUSecRealtime --value "$UNIT.timer")
  if [ -z "$next" ] || [ "$next" = "n/a" ]; then
    remove >/dev/null
    refuse "the timer on $host has no next start (did the time pass while installing?); nothing is scheduled"
  fi
  printf '{"host": "%s", "unit": "%s", "next": "%s"}\n' "$host" "$UNIT" "$next"
}

remove() {
  launch_running && refuse "$UNIT.service is running on $(uname -n) (a launch in progress); it is left alone: stop it
with \`make stop\` (the steps in flight finish first) or \`systemctl stop $UNIT.service\` (within a minute: the steps
in flight are given up, and the next launch resumes them), then remove"
  systemctl disable --now --quiet "$UNIT.timer" 2>/dev/null || true
  removed=""
  for f in "$UNITS/$UNIT.service" "$UNITS/$UNIT.timer"; do
    [ ! -e "$f" ] || { rm -f "$f"; removed="$removed ${f##*/}"; }
  done
  systemctl daemon-reload
  systemctl reset-failed "$UNIT.service" "$UNIT.timer" 2>/dev/null || true
  left=$(systemctl list-units --all --no-legend --plain "$UNIT.service" "$UNIT.timer" 2>/dev/null || true)
  [ -z "$left" ] || refuse "still loaded after removal: $left"
  printf '{"host": "%s", "unit": "%s", "removed": "%s"}\n' "$(uname -n)" "$UNIT" "${removed# }"
}

status() {
  : "${RECORD:?}"
  echo "host=$(uname -n)"
  if [ -f "$UNITS/$UNIT.timer" ]; then echo "installed=yes"; else echo "installed=no"; fi
  systemctl show -p ActiveState -p NextElapseUSecRealtime -p LastTriggerUSec "$UNIT.timer" 2>/dev/null | sed 's/^/timer./'
  systemctl show -p ActiveState -p Result -p ExecMainStartTimestamp -p ExecMainStatus "$UNIT.service" 2>/dev/null |
    sed 's/^/service./'
  if [ -f "$RECORD" ]; then echo "launch=$(cat "$RECORD")"; fi
}

case "${1:-}" in
  install) install ;;
  remove) remove ;;
  status) status ;;
  *) echo "usage: sh -s install|remove|status" >&2; exit 2 ;;
esac
