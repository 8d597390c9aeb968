#!/usr/bin/env bash
# Build the offline base image for ProgramBench eval containers (no Docker registry needed):
# debootstrap a minimal Debian bookworm rootfs and `docker import` it as agensh-base:bookworm-<key>
# (also tagged agensh-base:bookworm). Idempotent: skips if the image exists, and reuses the cached
# rootfs tarball in ${AGENSH_CACHE:-$HOME/.cache/agensh}/base/ (outside the checkout).
# Usage: sudo scripts/setup/base_image.sh [eval|systemd]   (needs root: debootstrap chroots and creates device nodes)
#   eval (default): agensh-base:bookworm, for evaluation containers and the demo's stand-ins.
#   systemd: agensh-systemd-host:bookworm, a test host: booted (/sbin/init), systemd with sshd for the host units'
#     tests; started with a shell instead, where a user with passwordless sudo runs the demo
#     (tests/integration/test_not_root.py: this machine's Docker, venv and toolchain mounted in). One image for both:
#     a debootstrap is minutes of a cold machine's test run.
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian).
set -euo pipefail

SUITE=bookworm
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Packages on top of --variant=minbase (which already has bash, coreutils, tar, gzip, sed, grep, findutils).
# What the evaluator runs in its containers: bash -lc, tar -xzf, sha256sum, sleep, git (seed_git step),
# python3 + pytest + pytest-xdist (it always sets PYTEST_ADDOPTS=--max-worker-restart=4), pkill (procps).
FLAVOR="${1:-eval}"
case "$FLAVOR" in
  eval) NAME=agensh-base
    PACKAGES="python3,python3-pytest,python3-pytest-xdist,git,ca-certificates,curl,procps,xz-utils,tar,bash,gzip"
    CMD='["bash"]' ;;
  systemd) NAME=agensh-systemd-host
    PACKAGES="systemd,systemd-sysv,dbus,openssh-server,sudo,git,curl,iproute2,procps,ca-certificates,xz-utils,tar,bash,gzip"
    CMD='["/sbin/init"]' ;;
  *) echo "usage: $0 [eval|systemd]" >&2; exit 2 ;;
esac
# Version key: change any of these and a new image/tarball is built; old ones stay until removed by hand.
VERSION="v1 $SUITE minbase $PACKAGES"
KEY="$(printf '%s' "$VERSION" | sha256sum | cut -c1-12)"
IMAGE="$NAME:$SUITE-$KEY"
CACHE="${AGENSH_CACHE:-$HOME/.cache/agensh}/base"
TARBALL="$CACHE/rootfs-$SUITE-$KEY.tar.gz"

t0=$(date +%s)
say() { echo "base_image: [$(( $(date +%s) - t0 ))s] $*"; }

present() {
  docker image inspect "$IMAGE" >/dev/null 2>&1 || return 1
  docker tag "$IMAGE" "$NAME:$SUITE"
  say "$IMAGE already present (tagged $NAME:$SUITE); nothing to do"
}
present && exit 0
if [ "$(id -u)" != 0 ]; then  # a user with passwordless sudo builds it as root, never asked for a password
  sudo -n true 2>/dev/null || { echo "base_image: building $IMAGE needs root (debootstrap chroots and creates device \
nodes); $(id -un) is not root and sudo -n cannot run (sudo asks for a password, or this user may not use it): run it \
as root, or give this user passwordless sudo" >&2; exit 1; }
  exec sudo -n env AGENSH_CACHE="${CACHE%/base}" DEBIAN_MIRROR="$MIRROR" bash "$0" "$FLAVOR"
fi
mkdir -p "$CACHE"
# one build at a time (the suite's tests run side by side): who waited finds the image made
exec 9>"$CACHE/.$NAME.lock"
flock 9
present && exit 0

if [ -s "$TARBALL" ]; then
  say "reusing cached rootfs $TARBALL"
else
  command -v debootstrap >/dev/null || { echo "base_image: debootstrap missing (apt-get install debootstrap)" >&2; exit 1; }
  ROOTFS="$(mktemp -d "$CACHE/rootfs-$KEY.XXXXXX")"
  trap 'rm -rf "$ROOTFS" "$TARBALL.part"' EXIT
  say "debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR into $ROOTFS"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 ||
    { tail -20 "$ROOTFS.log" >&2; echo "base_image: debootstrap failed, full log: $ROOTFS.log" >&2; exit 1; }
  rm -f "$ROOTFS.log"
  # Slim down: apt caches, package lists, docs; Docker supplies resolv.conf/hosts/hostname at run time.
  rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
    "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
  : >"$ROOTFS/etc/resolv.conf"
  say "packing rootfs -> $TARBALL"
  tar --numeric-owner --xattrs -C "$ROOTFS" -czf "$TARBALL.part" .
  mv "$TARBALL.part" "$TARBALL"
  rm -rf "$ROOTFS"; trap - EXIT
fi

say "importing $TARBALL as $IMAGE"
docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change "CMD $CMD" \
  --change 'LABEL agensh.role=base-image' \
  --change "LABEL agensh.base.key=$KEY" \
  "$TARBALL" "$IMAGE" >/dev/null
docker tag "$IMAGE" "$NAME:$SUITE"
say "done: $IMAGE (also $NAME:$SUITE), $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}')"
