#!/bin/sh
# Install or remove the host units: pbench.slice and pbench-reboot-guard.service (docs/requirements.md RA).
#   sh -s install < (settings + this script)   settings: SLICE_MEMORY_PERCENT, GUARD_EXEC (absolute path of the
#                           guard script, root's, outside any checkout), GUARD_SCRIPT (its content, written to
#                           GUARD_EXEC first), OWNER (the profile and its owner: `<profile>.<uid>-<hash>`), and for the
#                           receipt PROFILE, OWNER_USER, CHECKOUT, DATA_DIR, FROM_HOST (who installed, from where)
#   sh -s remove < (settings + this script)    OWNER leaves; the last profile to leave removes what agensh installed
#   sh -s status < (settings + this script)    what install would find, changing nothing (scripts.cli check): the
#                           receipt's fields, "absent" for a unit install would write
#   sh -s receipts < this script              every owner's receipt, one JSON line each, changing nothing
# The settings come as shell assignments on stdin before the script (components/host_units.py), never through the
# environment (SSH refuses it without AcceptEnv) nor the command line (the host's process list shows it).
# Idempotent. A slice or an enabled, working guard already on the host is reused, never overwritten. The units are
# shared by reference (docs/operations.md, "Host units on a shared host"): in STATE_DIR each profile that installed or
# reused them keeps its install receipt (JSON, also printed), and host-units.installed lists the units agensh
# installed once their installer has left. Removal leaves them while another profile's receipt, a task in the slice or a
# container whose cgroup parent is the slice remains (running or not: an inactive slice, as after a reboot with the
# cgroupfs driver, would be recreated without its memory limit by that container's next start), and says so.
set -eu
UNITS=${SYSTEMD_UNIT_DIR:-/etc/systemd/system}
SLICE=$UNITS/pbench.slice
GUARD_UNIT=pbench-reboot-guard.service
GUARD=$UNITS/$GUARD_UNIT
DIR=${STATE_DIR:-/var/lib/agensh}
STATE=$DIR/host-units.${OWNER:-}.json
INSTALLED=$DIR/host-units.installed

# found: slice_state (present or absent) and guard_state (reused when an enabled, working guard is in place, with its
# GUARD_EXEC; else absent)
found() {
  if [ -f "$SLICE" ]; then slice_state=present; else slice_state=absent; fi
  existing_exec=$(sed -n 's/^ExecStart=//p' "$GUARD" 2>/dev/null | head -n 1)
  if [ -n "$existing_exec" ] && systemctl is-enabled --quiet pbench-reboot-guard.service 2>/dev/null \
      && [ -x "${existing_exec%% *}" ]; then
    guard_state=reused; GUARD_EXEC=${existing_exec%% *}
  else
    guard_state=absent
  fi
}

receipt() {
  memory_max=$(systemctl show -p MemoryMax --value pbench.slice 2>/dev/null || echo unknown)
  printf '{"slice": "%s", "guard": "%s", "guard_exec": "%s", "slice_memory_max": "%s"}' \
    "$slice_state" "$guard_state" "${GUARD_EXEC:-}" "$memory_max"
}

install() {
  : "${SLICE_MEMORY_PERCENT:?}" "${GUARD_EXEC:?}" "${OWNER:?}"
  changed=0
  found
  if [ "$slice_state" = absent ]; then
    printf '[Unit]\nDescription=pbench team containers (agensh)\n\n[Slice]\nMemoryAccounting=yes\nMemoryMax=%s%%\n' \
      "$SLICE_MEMORY_PERCENT" >"$SLICE"
    slice_state=installed; changed=1
  fi
  if [ "$guard_state" = absent ]; then
    if [ -n "${GUARD_SCRIPT:-}" ]; then
      mkdir -p "$(dirname "$GUARD_EXEC")"
      printf '%s\n' "$GUARD_SCRIPT" >"$GUARD_EXEC"
      chown 0:0 "$GUARD_EXEC"
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
  receipt=$(receipt)
  if [ ! -f "$STATE" ]; then  # a re-install finds the units present: the first receipt says what this owner installed
    printf '%s, "profile": "%s", "user": "%s", "checkout": "%s", "data_dir": "%s", "from_host": "%s"}\n' \
      "${receipt%\}}" "${PROFILE:-}" "${OWNER_USER:-}" "${CHECKOUT:-}" "${DATA_DIR:-}" "${FROM_HOST:-}" >"$STATE"
  fi
  printf '%s\n' "$receipt"
}

# has UNIT: agensh installed it on this host (host-units.installed, which outlives the installer's receipt)
has() { grep -qsx "$1" "$INSTALLED"; }

remember() {  # RECEIPT: add what its owner installed (receipts from before host-units.installed existed too)
  case "$1" in *'"slice": "installed"'*) has pbench.slice || echo pbench.slice >>"$INSTALLED" ;; esac
  case "$1" in *'"guard": "installed"'*) has "$GUARD_UNIT" || echo "$GUARD_UNIT" >>"$INSTALLED" ;; esac
}

# in_slice: how many containers, running or not, have the slice as their cgroup parent: by its name, or by its cgroup's
# path under systemd's root cgroup (whether the slice is active or not); fails when Docker is there but does not answer
in_slice() {
  command -v docker >/dev/null 2>&1 || { echo 0; return 0; }
  ids=$(docker ps -aq) || return 1
  [ -n "$ids" ] || { echo 0; return 0; }
  root=$(awk -F: '$2 == "name=systemd" || $1 == "0" { print $3; exit }' /proc/1/cgroup)
  root=${root%/init.scope}  # systemd's own process sits in init.scope, under its root cgroup
  # shellcheck disable=SC2086
  docker inspect -f '{{.HostConfig.CgroupParent}}' $ids | grep -cxF -e pbench.slice -e "${root%/}/pbench.slice" || true
}

# receipts: each owner's receipt with its owner (the file's name) in front
receipts() {
  for receipt in "$DIR"/host-units.*.json; do
    [ -f "$receipt" ] || continue
    owner=${receipt#"$DIR"/host-units.}
    printf '{"owner": "%s", %s\n' "${owner%.json}" "$(sed 's/^{//' "$receipt")"
  done
}

remove() {
  : "${OWNER:?}"
  users=""
  for receipt in "$DIR"/host-units.*.json; do
    [ -f "$receipt" ] || continue
    remember "$(cat "$receipt")"
    if [ "$receipt" != "$STATE" ]; then user=${receipt#"$DIR"/host-units.}; users="${users:+$users, }${user%.json}"; fi
  done
  rm -f "$STATE"
  units=""
  if has pbench.slice; then units=pbench.slice; fi
  if has "$GUARD_UNIT"; then units="${units:+$units and }$GUARD_UNIT"; fi
  if [ -z "$units" ]; then echo "removed nothing: agensh did not install pbench.slice or $GUARD_UNIT"; return; fi
  if [ -n "$users" ]; then echo "left $units: still used by profiles $users"; return; fi
  # stopping the slice stops every unit in it; a container still there may be a neighbour's that counts on the guard
  tasks=0
  if systemctl is-active --quiet pbench.slice; then tasks=$(systemctl show -p TasksCurrent --value pbench.slice); fi
  if [ "$tasks" != 0 ]; then echo "left $units: tasks still run in pbench.slice (TasksCurrent=$tasks)"; return; fi
  if ! parented=$(in_slice); then echo "left $units: Docker cannot say which containers the slice holds"; return; fi
  if [ "$parented" != 0 ]; then echo "left $units: $parented container(s) have pbench.slice as their cgroup parent"; return; fi
  if has "$GUARD_UNIT"; then
    systemctl disable --quiet "$GUARD_UNIT" 2>/dev/null || true
    rm -f "$GUARD"
  fi
  if has pbench.slice; then
    systemctl stop pbench.slice 2>/dev/null || true
    rm -f "$SLICE"
  fi
  systemctl daemon-reload
  rm -f "$INSTALLED"
  echo "removed $units"
}

if [ "${1:-}" = status ]; then found; receipt; echo; exit 0; fi  # reads only: no state directory, no lock
if [ "${1:-}" = receipts ]; then receipts; exit 0; fi
mkdir -p "$DIR"
if command -v flock >/dev/null 2>&1; then  # two profiles installing or removing at once see each other's receipts
  exec 9>"$DIR/host-units.lock"
  flock -w 60 9 || { echo "host units: another install or removal still holds $DIR/host-units.lock" >&2; exit 1; }
fi
case "${1:-}" in
  install) install ;;
  remove) remove ;;
  *) echo "usage: $0 install|remove|status" >&2; exit 2 ;;
esac
