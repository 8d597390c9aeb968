#!/usr/bin/env bash
# Build the Pulumi toolchain offline: the CLI from the Go module proxy, and the official Python language host,
# pulumi-command provider and pulumi-docker provider from their upstream sources in the vendor folder
# (AGENSH_VENDOR, by default the vendor folder beside the checkout). Nothing here is our code: every program is built as upstream builds it.
#
# Usage: build.sh OUT       (OUT/bin: pulumi, the language host and its two scripts; OUT/plugins: the providers)
# Env:   AGENSH_VENDOR (the vendor folder), AGENSH_CACHE (build scratch), the versions of scripts/setup/versions.env.
# Writes OUT/built.tsv: one row per program (name, version, source archive sha256, binary sha256, Go main module),
# which tests/toolchain checks against what `pulumi plugin ls` and PATH resolve to.
set -euo pipefail
OUT="${1:?usage: build.sh OUT}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../scripts/setup/versions.env
. "$ROOT/scripts/setup/versions.env"
VENDOR="${AGENSH_VENDOR:-$ROOT/../shared/vendor}"
CACHE="${AGENSH_CACHE:-$HOME/.cache/agensh}"
export GOFLAGS=-mod=mod CGO_ENABLED=0

die() { echo "toolchain: $*" >&2; exit 1; }
log() { echo "    [$SECONDS s] $*"; }

# source ARCHIVE SHA256: verify a vendored archive, unpack it into the scratch folder and print its folder.
source_dir() {
  local archive="$VENDOR/$1" want="$2" got
  [ -f "$archive" ] || die "missing $archive: the upstream sources come from the vendor folder (set AGENSH_VENDOR to where SOURCES.md lists them)"
  got="$(sha256sum "$archive" | cut -d' ' -f1)"
  [ "$got" = "$want" ] || die "$archive has sha256 $got, expected $want (scripts/setup/versions.env); refusing to build from it"
  tar -xzf "$archive" -C "$SCRATCH"
  echo "$SCRATCH/${1%.tar.gz}"
}

# record NAME VERSION ARCHIVE_SHA256 BINARY
record() {
  local module
  module="$(go version -m "$4" | awk '$1=="path"{print $2; exit}')"
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$(sha256sum "$4" | cut -d' ' -f1)" "$module" >>"$OUT/built.tsv.part"
}

# The CLI: github.com/pulumi/pulumi/pkg/v3 from the module proxy, in a throwaway wrapper module.
build_cli() {
  local dir="$SCRATCH/cli" v="$PULUMI_CLI_VERSION" pkg=github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init agensh.local/build >/dev/null 2>&1
    printf '//go:build tools\npackage tools\nimport _ "%s"\n' "$pkg" >tools.go
    go mod edit -require "github.com/pulumi/pulumi/pkg/v3@v$v" -require "github.com/pulumi/pulumi/sdk/v3@v$v" \
      -replace "github.com/atotto/clipboard=$CLIPBOARD_REPLACEMENT"
    go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; exit 1; }
    go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$v" \
      -o "$OUT/bin/pulumi" "$pkg"
  )
  record pulumi "$v" "go-module-proxy" "$OUT/bin/pulumi"
}

# The Python language host, with the exec shim and the dynamic-provider script beside it (as upstream installs it).
build_langhost() {
  local src
  src="$(source_dir "pulumi-$PULUMI_LANGHOST_VERSION.tar.gz" "$PULUMI_LANGHOST_SHA256")"
  (cd "$src/sdk/python/cmd/pulumi-language-python" &&
    go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=v$PULUMI_LANGHOST_VERSION" \
      -o "$OUT/bin/pulumi-language-python" .)
  install -m 755 "$src/sdk/python/cmd/pulumi-language-python-exec" "$src/sdk/python/dist/pulumi-resource-pulumi-python" "$OUT/bin/"
  record pulumi-language-python "$PULUMI_LANGHOST_VERSION" "$PULUMI_LANGHOST_SHA256" "$OUT/bin/pulumi-language-python"
}

build_command() {
  local src
  src="$(source_dir "pulumi-command-$PULUMI_COMMAND_VERSION.tar.gz" "$PULUMI_COMMAND_SHA256")"
  (cd "$src/provider" &&
    go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi-command/provider/pkg/version.Version=$PULUMI_COMMAND_VERSION" \
      -o "$OUT/plugins/pulumi-resource-command" ./cmd/pulumi-resource-command)
  record pulumi-resource-command "$PULUMI_COMMAND_VERSION" "$PULUMI_COMMAND_SHA256" "$OUT/plugins/pulumi-resource-command"
}

# pulumi-docker bridges the Terraform docker provider it pins as `upstream`, patched, with an embedded schema.
build_docker() {
  local src upstream p
  src="$(source_dir "pulumi-docker-$PULUMI_DOCKER_VERSION.tar.gz" "$PULUMI_DOCKER_SHA256")"
  upstream="$(source_dir "$TF_DOCKER_ARCHIVE" "$TF_DOCKER_SHA256")"
  mv "$upstream" "$src/upstream"
  for p in "$src"/patches/*.patch; do patch -s -p1 -d "$src/upstream" <"$p"; done
  (cd "$src/provider/cmd/pulumi-resource-docker" && VERSION="$PULUMI_DOCKER_VERSION" go generate . &&
    cd "$src/provider" &&
    go build -trimpath -ldflags "-s -w -X github.com/pulumi/pulumi-docker/provider/v5/pkg/version.Version=$PULUMI_DOCKER_VERSION" \
      -o "$OUT/plugins/pulumi-resource-docker" ./cmd/pulumi-resource-docker)
  record pulumi-resource-docker "$PULUMI_DOCKER_VERSION" "$PULUMI_DOCKER_SHA256" "$OUT/plugins/pulumi-resource-docker"
}

command -v go >/dev/null || die "Go is needed to build the Pulumi toolchain here. Install Go 1.25+ (https://go.dev/dl), or the official Pulumi CLI (https://www.pulumi.com/docs/install/) with its docker $PULUMI_DOCKER_VERSION and command $PULUMI_COMMAND_VERSION plugins, then re-run."
mkdir -p "$OUT/bin" "$OUT/plugins" "$CACHE"
SCRATCH="$(mktemp -d "$CACHE/build.XXXXXX")"
trap 'rm -rf "$SCRATCH"' EXIT
rm -f "$OUT/built.tsv.part"
for piece in ${AGENSH_BUILD_ONLY:-cli langhost command docker}; do
  log "building $piece"
  "build_$piece"
done
mv "$OUT/built.tsv.part" "$OUT/built.tsv"
log "toolchain built in $OUT"
