#!/usr/bin/env bash
# Build a Docker Engine 29 (dockerd, docker CLI with buildx, containerd, runc, docker-init, docker-proxy) from the Go
# module proxy, for a test host that needs a newer engine than Debian's docker.io: no GitHub, no Docker registry.
# Cached by version outside the checkout, in ${AGENSH_CACHE:-$HOME/.cache/agensh}/docker29/<key>/bin/, where <key>
# hashes the pins below, this script (its comments and blank lines left out) and `go version`; a folder with .done is
# complete and reused. Cold: about 15-25 minutes on 2 cores, most of it dockerd and buildx; warm: a second.
# Usage: scripts/setup/docker29.sh   -> the bin folder's path on stdout; progress and each binary's version on stderr.
# Use:   PATH="$BIN:$PATH" dockerd ...   (dockerd finds containerd, containerd-shim-runc-v2, runc, docker-init and
#        docker-proxy on PATH). The CLI finds buildx through "cliPluginsExtraDirs": ["$BIN/cli-plugins"] in
#        $DOCKER_CONFIG/config.json (default ~/.docker), or a link to $BIN/cli-plugins/docker-buildx in
#        /usr/local/lib/docker/cli-plugins/. Not DOCKER_CONFIG="$BIN": buildx then writes its state into the cache.
# Needs: Go (>= the modules' go lines, 1.26.3; GOTOOLCHAIN=local: no toolchain download), gcc, and from Debian's
# packages libseccomp-dev, pkg-config and tini, which it installs with apt-get as root (or passwordless sudo).
set -euo pipefail

# --- Pins. Bump together: these are the combination upstream tested for that engine release. ---
# Docker 29.8.1's daemon. moby/moby/v2's v2.0.0-beta.N tags sit on the commits of docker-v29.x tags; beta.24 carries
# releases/versions.yaml "next: 29.8.1" and was tagged the day CLI v29.8.1 was (beta.25 says next 29.9.0 but predates
# the 29.9.0 CLI by a week: an rc). The module holds no version string: hack/make.sh sets it by ldflags, as below.
MOBY_MODULE=github.com/moby/moby/v2
MOBY_VERSION=v2.0.0-beta.24
DOCKER_VERSION=29.8.1
# The CLI has no go.mod (CalVer), hence +incompatible; its module zip carries vendor.mod and vendor.sum.
CLI_VERSION=v29.8.1+incompatible
# What that moby's Dockerfile builds into its own bundle (CONTAINERD_VERSION, RUNC_VERSION; tini v0.19.0 = Debian's).
CONTAINERD_VERSION=v2.3.5
RUNC_VERSION=v1.5.1
# Newer than moby's dev-container pin (0.37.0): a plugin, independent of the engine's version.
BUILDX_VERSION=v0.39.1

PINS="$MOBY_VERSION $DOCKER_VERSION $CLI_VERSION $CONTAINERD_VERSION $RUNC_VERSION $BUILDX_VERSION"
t0=$(date +%s)
say() { echo "docker29: $*" >&2; }
die() { say "$*"; exit 1; }

export PATH="$PATH:/usr/local/go/bin"
command -v go >/dev/null || die "Go not found (on PATH or /usr/local/go/bin)"
# A module asking for a newer Go than this one must fail here, not fetch a toolchain.
export GOTOOLCHAIN=local

SELF="${BASH_SOURCE[0]}"
KEY="$( { echo "$PINS"; go version; grep -v '^[[:space:]]*\(#.*\)\?$' "$SELF"; } | sha256sum | cut -c1-12)"
ROOT="${AGENSH_CACHE:-$HOME/.cache/agensh}/docker29"
DEST="$ROOT/$KEY"
BIN="$DEST/bin"

report() {
  local b flag
  say "Docker $DOCKER_VERSION in $BIN ($(du -sh "$BIN" | cut -f1)):"
  for b in dockerd docker containerd containerd-shim-runc-v2 ctr runc docker-init docker-proxy; do
    flag=--version
    [ "$b" = containerd-shim-runc-v2 ] && flag=-v  # Go's flag package: it knows only -v, and names itself on line 1
    say "  $b: $("$BIN/$b" "$flag" 2>&1 | grep -m1 -v -e '^$' -e ':$' || true)"
  done
  say "  cli-plugins/docker-buildx: $("$BIN/cli-plugins/docker-buildx" version 2>&1 | head -1)"
  echo "$BIN"
}

[ -e "$DEST/.done" ] && { report; exit 0; }
mkdir -p "$DEST"
# Concurrent callers (tests run side by side) wait here; who waited finds it done.
exec 9<"$DEST"
flock 9
[ -e "$DEST/.done" ] && { report; exit 0; }

# --- Build prerequisites from Debian: runc links libseccomp statically (libseccomp.a, found by pkg-config), and
# docker-init is tini-static, as in Docker's own packages. ---
missing=()
command -v gcc >/dev/null || missing+=(gcc libc6-dev)
command -v pkg-config >/dev/null || missing+=(pkg-config)
pkg-config --exists libseccomp 2>/dev/null && [ -e "$(pkg-config --variable=libdir libseccomp)/libseccomp.a" ] ||
  missing+=(libseccomp-dev)
[ -x /usr/bin/tini-static ] || missing+=(tini)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  if [ "$(id -u)" != 0 ]; then
    sudo -n true 2>/dev/null || die "needs Debian packages ${missing[*]}: install them as root (apt-get install)"
    sudo=(sudo -n)
  fi
  say "installing ${missing[*]} (apt-get)"
  # A fresh container has no package lists: update only when the install cannot find a package.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null 2>&1 || { "${sudo[@]}" apt-get update -qq >/dev/null &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
      >/dev/null; } || die "apt-get install ${missing[*]} failed"
fi

rm -rf "$BIN" "$DEST/build.log"
mkdir -p "$BIN/cli-plugins"
LOG="$DEST/build.log"
WORK="$(mktemp -d)"
trap 'chmod -R u+w "$WORK" 2>/dev/null; rm -rf "$WORK"' EXIT

# step NAME CMD...: run quietly into the log, say how long it took, show the log's tail when it fails.
step() {
  local name="$1" s rc=0
  shift
  s=$(date +%s)
  say "building $name ..."
  echo "=== $name: $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    tail -25 "$LOG" >&2
    die "$name failed (exit $rc); full log: $LOG"
  fi
  say "built $name in $(( $(date +%s) - s ))s"
  echo "$name $(( $(date +%s) - s ))s" >>"$DEST/build-times.txt"
}
: >"$DEST/build-times.txt"

NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
# -trimpath: no temp or cache paths in the binaries; -s -w: smaller, Go's own stack traces stay readable.
# dockerd as hack/make.sh's static "binary" bundle: cgo for the btrfs driver and XFS quotas, linked statically; without
# journald (libsystemd) and libnftables (its nftables backend then runs the nft command), as upstream's static build.
MOBY_X="-X $MOBY_MODULE/dockerversion.Version=$DOCKER_VERSION -X $MOBY_MODULE/dockerversion.GitCommit=$MOBY_VERSION \
-X $MOBY_MODULE/dockerversion.BuildTime=$NOW"
step "dockerd $DOCKER_VERSION ($MOBY_MODULE@$MOBY_VERSION)" \
  env GOBIN="$BIN" CGO_ENABLED=1 go install -trimpath -tags "netgo osusergo static_build nri_no_wasm" \
  -ldflags "-s -w $MOBY_X -extldflags -static" "$MOBY_MODULE/cmd/dockerd@$MOBY_VERSION"
step "docker-proxy ($MOBY_MODULE@$MOBY_VERSION)" \
  env GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w $MOBY_X" \
  "$MOBY_MODULE/cmd/docker-proxy@$MOBY_VERSION"

# The CLI: go install would build it against its deps' minimum versions (no go.mod to pin them), so build a writable
# copy with vendor.mod as go.mod, as the CLI's own scripts/with-go-mod.sh does. The zip keeps only vendor/modules.txt:
# drop it, so the deps come from the module cache, checked against vendor.sum. Pure Go: cgo serves macOS keychains.
build_cli() {
  local src
  src="$(go mod download -json "github.com/docker/cli@$CLI_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [ -d "$src" ] || return 1
  cp -r "$src" "$WORK/cli" || return 1
  chmod -R u+w "$WORK/cli" || return 1
  cp "$WORK/cli/vendor.mod" "$WORK/cli/go.mod" || return 1
  cp "$WORK/cli/vendor.sum" "$WORK/cli/go.sum" || return 1
  rm -rf "$WORK/cli/vendor"
  (cd "$WORK/cli" && CGO_ENABLED=0 GO111MODULE=on GOFLAGS=-mod=readonly go build -trimpath -tags "grpcnotrace" \
    -ldflags "-s -w -X github.com/docker/cli/cli/version.Version=$DOCKER_VERSION \
-X github.com/docker/cli/cli/version.GitCommit=${CLI_VERSION%+incompatible} \
-X github.com/docker/cli/cli/version.BuildTime=$NOW" -o "$BIN/docker" ./cmd/docker)
}
step "docker CLI $CLI_VERSION" build_cli

# containerd as moby's static bundle builds it (make STATIC=1 with cgo off): no btrfs snapshotter, which needs cgo.
CTRD=github.com/containerd/containerd/v2
CTRD_X="-X $CTRD/version.Version=$CONTAINERD_VERSION -X $CTRD/version.Revision=$CONTAINERD_VERSION -X $CTRD/version.Package=$CTRD"
step "containerd, ctr $CONTAINERD_VERSION" \
  env GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -tags "urfave_cli_no_docs osusergo netgo static_build" \
  -ldflags "-s -w $CTRD_X" "$CTRD/cmd/containerd@$CONTAINERD_VERSION" "$CTRD/cmd/ctr@$CONTAINERD_VERSION"
step "containerd-shim-runc-v2 $CONTAINERD_VERSION" \
  env GOBIN="$BIN" CGO_ENABLED=0 go install -trimpath -tags "urfave_cli_no_docs osusergo netgo static_build no_grpc" \
  -ldflags "-s -w $CTRD_X" "$CTRD/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"

# runc as its `make static` with moby's RUNC_BUILDTAGS=-libpathrs: seccomp needs cgo and libseccomp (without it the
# engine's default seccomp profile cannot be applied); libpathrs is an optional Rust library no distribution ships.
RUNC_MODE=(-buildmode=pie)
RUNC_LINK="-linkmode external -extldflags -static-pie"
case "$(go env GOARCH)" in amd64 | arm64) ;; *) RUNC_MODE=(); RUNC_LINK="-extldflags -static" ;; esac
step "runc $RUNC_VERSION" \
  env GOBIN="$BIN" CGO_ENABLED=1 go install -trimpath "${RUNC_MODE[@]}" \
  -tags "seccomp urfave_cli_no_docs netgo osusergo" -ldflags "-s -w -X main.gitCommit=$RUNC_VERSION $RUNC_LINK" \
  "github.com/opencontainers/runc@$RUNC_VERSION"

step "docker-buildx $BUILDX_VERSION" \
  env GOBIN="$WORK/buildx" CGO_ENABLED=0 go install -trimpath -ldflags "-s -w \
-X github.com/docker/buildx/version.Version=$BUILDX_VERSION -X github.com/docker/buildx/version.Revision=$BUILDX_VERSION \
-X github.com/docker/buildx/version.Package=github.com/docker/buildx" "github.com/docker/buildx/cmd/buildx@$BUILDX_VERSION"
mv "$WORK/buildx/buildx" "$BIN/cli-plugins/docker-buildx"

# docker-init: Debian's tini-static (tini is C, not a Go module).
cp /usr/bin/tini-static "$BIN/docker-init"

printf '%s\n' "moby $MOBY_MODULE@$MOBY_VERSION (Docker $DOCKER_VERSION)" "cli github.com/docker/cli@$CLI_VERSION" \
  "containerd $CTRD@$CONTAINERD_VERSION" "runc github.com/opencontainers/runc@$RUNC_VERSION" \
  "buildx github.com/docker/buildx@$BUILDX_VERSION" "docker-init $(dpkg-query -W -f='tini ${Version}' tini 2>/dev/null)" \
  "$(go version)" >"$DEST/VERSIONS"
touch "$DEST/.done"
say "built in $(( $(date +%s) - t0 ))s (log: $LOG)"
report
