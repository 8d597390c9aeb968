#!/bin/sh
# Install or remove the host units: pbench.slice and pbench-reboot-guard.service (docs/requirements.md RA).
#   sh -s install < (settings + this script)   settings: SLICE_MEMORY_PERCENT, GUARD_EXEC (absolute path of the
#                           guard script), GUARD_SCRIPT (optional: its content, written to GUARD_EXEC first; remote
#                           hosts), OWNER (the profile that installs)
#   sh -s remove < (settings + this script)    removes only what OWNER's install installed
# The settings come as shell assignments on stdin before the script (components/host_units.py), never through the
# environment (SSH refuses it without AcceptEnv) nor the command line (the host's process list shows it).
# Idempotent. A slice or an enabled, working guard already on the host is reused, never overwritten. The install
# receipt (JSON, also printed) stays on the host in STATE_DIR, so removal knows what this owner installed.
set -eu
UNITS=${SYSTEMD_UNIT_DIR:-/etc/systemd/system}
SLICE=$UNITS/pbench.slice
GUARD=$UNITS/pbench-reboot-guard.service
STATE=${STATE_DIR:-/var/lib/agensh}/host-units.${OWNER:?}.json

install() {
  : "${SLICE_MEMORY_PERCENT:?}" "${GUARD_EXEC:?}"
  changed=0
  if [ -f "$SLICE" ]; then
    slice_state=present
  else
    printf '[Unit]\nDescription=pbench team containers (agensh)\n\n[Slice]\nMemoryAccounting=yes\nMemoryMax=%s%%\n' \
      "$SLICE_MEMORY_PERCENT" >"$SLICE"
    slice_state=installed; changed=1
  fi
  existing_exec=$(sed -n 's/^ExecStart=//p' "$GUARD" 2>/dev/null | head -n 1)
  if [ -n "$existing_exec" ] && systemctl is-enabled --quiet pbench-reboot-guard.service 2>/dev/null \
      && [ -x "${existing_exec%% *}" ]; then
    guard_state=reused; GUARD_EXEC=${existing_exec%% *}
  else
    if [ -n "${GUARD_SCRIPT:-}" ]; then
      mkdir -p "$(dirname "$GUARD_EXEC")"
      printf '%s\n' "$GUARD_SCRIPT" >"$GUARD_EXEC"
      chmod 755 "$GUARD_EXEC"
    fi
    [ -x "$GUARD_EXEC" ] || { echo "guard script $GUARD_EXEC is missing or not executable" >&2; exit 1; }
    printf '[Unit]\nDescription=Stop omcgitea-* containers after a reboot (pbench reboot guard)\nAfter=docker.service\nRequires=docker.service\n\n[Service]\nType=oneshot\nExecStart=%s\n\n[Install]\nWantedBy=multi-user.target\n' \
      "$GUARD_EXEC" >"$GUARD"
    guard_state=installed; changed=1
  fi
  [ "$changed" = 0 ] || systemctl daemon-reload
  [ "$guard_state" = reused ] || systemctl enable --quiet pbench-reboot-guard.service
  systemctl start pbench.slice 2>/dev/null || true
  memory_max=$(systemctl show -p MemoryMax --value pbench.slice 2>/dev/null || echo unknown)
  receipt=$(printf '{"slice": "%s", "guard": "%s", "guard_exec": "%s", "slice_memory_max": "%s"}' \
    "$slice_state" "$guard_state" "$GUARD_EXEC" "$memory_max")
  if [ ! -f "$STATE" ]; then  # a re-install finds the units present: the first receipt says what this owner installed
    mkdir -p "$(dirname "$STATE")"
    printf '%s\n' "$receipt" >"$STATE"
  fi
  printf '%s\n' "$receipt"
}

remove() {
  receipt=$(cat "$STATE" 2>/dev/null || true)
  removed=""
  case "$receipt" in *'"guard": "installed"'*)
    systemctl disable --quiet pbench-reboot-guard.service 2>/dev/null || true
    rm -f "$GUARD"; removed="$removed guard" ;;
  esac
  case "$receipt" in *'"slice": "installed"'*)
    systemctl stop pbench.slice 2>/dev/null || true
    rm -f "$SLICE"; removed="$removed slice" ;;
  esac
  [ -z "$removed" ] || systemctl daemon-reload
  rm -f "$STATE"
  echo "removed:${removed:- nothing}"
}

case "${1:-}" in
  install) install ;;
  remove) remove ;;
  *) echo "usage: $0 install|remove" >&2; exit 2 ;;
esac
