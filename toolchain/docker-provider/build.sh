#!/usr/bin/env bash
# Build the bridged Pulumi docker plugin (pulumi-resource-docker, wire-compatible with
# PyPI pulumi-docker==5.2.0 for Container/Network/Volume/RemoteImage) from Go modules only.
#
# Usage: build.sh OUTPUT_PATH
# Env (optional): PLUGIN_VERSION (5.2.0), UPSTREAM_VERSION, WORK_DIR (default mktemp -d), KEEP_WORK=1,
#   PULUMI_DOCKER_SDK (pulumi_docker package dir for the wire-name check), SCHEMA_OUT (copy schema.json there)
#
# Why a work dir: the upstream TF provider keeps its constructor in internal/, so we need a
# writable copy of it with our _shim/shim.go added; that copy must never land in our repo.
set -euo pipefail

OUT=${1:?usage: $0 OUTPUT_PATH}
case "$OUT" in /*) ;; *) OUT="$PWD/$OUT" ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)

UPSTREAM_MOD=github.com/kreuzwerker/terraform-provider-docker
UPSTREAM_PATH=github.com/terraform-providers/terraform-provider-docker # what its go.mod declares
UPSTREAM_VERSION=${UPSTREAM_VERSION:-v0.0.0-20260916201441-96d331c98ff4}
PLUGIN_VERSION=${PLUGIN_VERSION:-5.2.0}
TAGS=no_compose # the upstream's docker_compose pulls in all of docker/compose; we don't bridge it

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}"
WORK=${WORK_DIR:-$(mktemp -d)}
trap '[ "${KEEP_WORK:-0}" = 1 ] || rm -rf "$WORK"' EXIT
log() { printf '==> [%ss] %s\n' "$SECONDS" "$*" >&2; }

log "work dir $WORK"
rm -rf "$WORK/src" "$WORK/schema"; mkdir -p "$WORK/src" "$WORK/schema"
# our own sources only (no in-place build leftovers)
tar -C "$HERE" --exclude=./upstream --exclude=./bin -cf - . | tar -C "$WORK/src" -xf -

log "fetching upstream $UPSTREAM_MOD@$UPSTREAM_VERSION"
UDIR=$(cd "$WORK/src" && go mod download -json "$UPSTREAM_MOD@$UPSTREAM_VERSION" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit("go mod download: %s" % d.get("Error")))')
cp -r "$UDIR" "$WORK/src/upstream"; chmod -R u+w "$WORK/src/upstream"
grep -q "^module $UPSTREAM_PATH\$" "$WORK/src/upstream/go.mod" || { echo "unexpected upstream module path" >&2; exit 1; }
mkdir -p "$WORK/src/upstream/shim"; cp "$HERE/_shim/shim.go" "$WORK/src/upstream/shim/shim.go"

cd "$WORK/src"
LDFLAGS="-s -w -X agensh.local/docker-provider/provider.Version=$PLUGIN_VERSION"
log "building pulumi-tfgen-docker (tags $TAGS)"
# -mod=mod: tolerate a go.sum that lacks entries (it is committed, but this keeps cold builds robust)
go build -mod=mod -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" -o "$WORK/bin/pulumi-tfgen-docker" ./cmd/pulumi-tfgen-docker

log "generating schema"
# --skip-examples: converting the docs' HCL examples would need the pulumi CLI and its converter plugin
"$WORK/bin/pulumi-tfgen-docker" schema --skip-examples --out "$WORK/schema" >"$WORK/tfgen.log" 2>&1 || { cat "$WORK/tfgen.log" >&2; exit 1; }
grep -iE '^(error|warning)' "$WORK/tfgen.log" | head -20 >&2 || true
cp "$WORK/schema/schema.json" cmd/pulumi-resource-docker/schema-embed.json

# Wire compatibility gate: property names must match the Python SDK we serve.
SDK=${PULUMI_DOCKER_SDK:-$HERE/../../.venv/lib/python3.11/site-packages/pulumi_docker}
if [ -d "$SDK" ]; then
  log "checking wire names against $SDK"
  if ! python3 "$HERE/scripts/check_wire_names.py" "$WORK/schema/schema.json" "$SDK" >"$WORK/wire.log"; then
    cat "$WORK/wire.log" >&2; exit 1
  fi
  tail -1 "$WORK/wire.log" >&2
else
  log "pulumi_docker SDK not found at $SDK; skipping wire-name check"
fi

log "building pulumi-resource-docker $PLUGIN_VERSION"
mkdir -p "$(dirname "$OUT")"
go build -mod=mod -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" -o "$OUT" ./cmd/pulumi-resource-docker
[ -n "${SCHEMA_OUT:-}" ] && cp "$WORK/schema/schema.json" "$SCHEMA_OUT"
log "built $OUT ($(du -h "$OUT" | cut -f1)), version $("$OUT" -version)"
