#!/usr/bin/env bash
# Set up a machine for agensh: Docker engine, host tools, the Pulumi toolchain, the Python environment.
# Idempotent: every step checks what is in place first and skips it. Each step prints its duration.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# shellcheck source=versions.env
. "$ROOT/scripts/setup/versions.env"
# shellcheck source=../env.sh
. "$ROOT/scripts/env.sh"

die() { echo "setup: $*" >&2; exit 1; }
# ~/.agensh holds the state, the passphrase and logs: private before anything is written into it
(umask 077 && mkdir -p "$AGENSH_HOME") && chmod 700 "$AGENSH_HOME"
step() {
  local name="$1" t0; shift
  t0=$(date +%s); echo "==> $name"
  "$@"
  echo "    done in $(( $(date +%s) - t0 ))s"
}

apt_updated=""
apt_install() {
  local as=()  # root, or a user's passwordless sudo (never a password prompt)
  if [ "$(id -u)" != 0 ]; then
    sudo -n true 2>/dev/null || die "installing $* needs root; $(id -un) is not root and sudo -n cannot run (sudo asks \
for a password, or this user may not use it): install them by hand (sudo apt-get install -y $*), or give this user \
passwordless sudo"
    as=(sudo -n)
  fi
  command -v apt-get >/dev/null || die "no apt-get on this machine; install by hand: $*"
  [ -n "$apt_updated" ] || { "${as[@]}" apt-get update -qq; apt_updated=1; }
  "${as[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  [ -x /bin/busybox ] || missing+=(busybox-static)
  command -v git >/dev/null || missing+=(git)
  command -v curl >/dev/null || missing+=(curl)
  command -v ip >/dev/null || missing+=(iproute2)
  # the swarm lab (tests/integration/test_swarm_*): namespaces, forwarding rules and a registry on the manager
  command -v nsenter >/dev/null || missing+=(util-linux)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v docker-registry >/dev/null || missing+=(docker-registry)
  [ -x /usr/bin/chromium ] || missing+=(chromium)  # the report's tests open the page in headless Chromium
  if [ ${#missing[@]} -eq 0 ]; then echo "    host tools present"; else apt_install "${missing[@]}"; fi
}

docker_engine() {
  if docker info >/dev/null 2>&1; then echo "    Docker engine already running (left as it is)"; return; fi
  command -v dockerd >/dev/null || apt_install docker.io
  [ "$(id -u)" = 0 ] || die "Docker engine not reachable and this user cannot start it; start dockerd (or add yourself to the docker group)"
  echo "    starting dockerd (log: $AGENSH_HOME/dockerd.log)"
  nohup dockerd >"$AGENSH_HOME/dockerd.log" 2>&1 &
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && return; sleep 1; done
  die "dockerd did not answer within 60 s; see $AGENSH_HOME/dockerd.log"
}

# --- Pulumi toolchain -------------------------------------------------------------------------
plugins_ok() {  # the pulumi on PATH has both resource plugins at the pinned versions
  local ls; ls="$(pulumi plugin ls 2>/dev/null)" || return 1
  grep -Eq "^docker +resource +$PULUMI_DOCKER_VERSION( |$)" <<<"$ls" &&
    grep -Eq "^command +resource +$PULUMI_COMMAND_VERSION( |$)" <<<"$ls"
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# The CLI from the Go module proxy, the official language host and providers from the vendored upstream sources
# (toolchain/build.sh), registered as plugins of the toolchain's own PULUMI_HOME.
build_toolchain() {
  local tc="$AGENSH_TOOLCHAIN"
  bash "$ROOT/toolchain/build.sh" "$tc"
  export PATH="$tc/bin:$PATH" PULUMI_HOME="$tc/home"
  pulumi plugin install resource command "$PULUMI_COMMAND_VERSION" --file "$tc/plugins/pulumi-resource-command" >/dev/null
  pulumi plugin install resource docker "$PULUMI_DOCKER_VERSION" --file "$tc/plugins/pulumi-resource-docker" >/dev/null
  plugins_ok || die "plugins registered but not listed by 'pulumi plugin ls'"
  touch "$tc/.complete"
}

toolchain() {
  if [ -f "$AGENSH_TOOLCHAIN/.complete" ]; then
    echo "    reusing toolchain cache $AGENSH_TOOLCHAIN"
  elif command -v pulumi >/dev/null && version_ge "$(pulumi version | tr -d v)" "$PULUMI_PY_VERSION" && plugins_ok; then
    echo "    using $(command -v pulumi) ($(pulumi version)) with its installed plugins"
    return
  else
    build_toolchain
  fi
  . "$ROOT/scripts/env.sh"
  echo "    $(pulumi version): $(pulumi plugin ls | awk 'NR>1 && $2=="resource"{printf "%s %s  ", $1, $3}')"
}

# --- Python -----------------------------------------------------------------------------------
python_env() {
  local venv="$ROOT/.venv" stamp want
  want="$(cat "$ROOT/scripts/setup/versions.env" "$ROOT/requirements.txt" | sha256sum | cut -c1-16)"
  stamp="$venv/.agensh-deps"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then echo "    $venv up to date"; return; fi
  python3 -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null || die "Python 3.11+ is needed (programbench requires it); install python3.11 and python3.11-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv" || die "could not create a venv; install python3-venv"
  "$venv/bin/pip" install -q --upgrade pip >/dev/null
  # requirements.txt names some versions by versions.env's names (${NAME}): pip reads them from the environment
  (set -a && . "$ROOT/scripts/setup/versions.env" && "$venv/bin/pip" install -q -r "$ROOT/requirements.txt")
  echo "$want" >"$stamp"
}

# The project on the venv's path (model/project.py): a .pth file naming this checkout, so a process started
# outside it, such as the policy pack, which the engine runs in policies/, imports the same modules by name.
project_path() {
  local pth
  pth="$("$ROOT/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/agensh-project.pth"
  if [ "$(cat "$pth" 2>/dev/null)" = "$ROOT" ]; then echo "    $pth names $ROOT"; return; fi
  echo "$ROOT" >"$pth"
  echo "    $pth now names $ROOT"
}

# pyproject.toml's console commands (`agensh`) in the venv's bin/, which pip writes only for an installed project.
console_scripts() {
  (cd "$ROOT" && .venv/bin/python -m scripts.setup.console_scripts)
}

# The real GitHub Copilot CLI at the demo's pin, from npm into the cache (keyed by version), imported as
# agensh-copilot:<version> for the demo checkout's worker images (scripts/setup/copilot_cli.py). Tests never reach npm.
copilot_cli() {
  command -v npm >/dev/null || apt_install npm
  (cd "$ROOT" && .venv/bin/python -m scripts.setup.copilot_cli)
}

secrets_home() {
  (umask 077 && mkdir -p "$AGENSH_HOME/state")
  if [ "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" = "$AGENSH_HOME/passphrase" ] && [ ! -s "$AGENSH_HOME/passphrase" ]; then
    (umask 077; head -c 24 /dev/urandom | base64 >"$AGENSH_HOME/passphrase")
    echo "    generated the stack passphrase in $AGENSH_HOME/passphrase (mode 600); keep it to read your stacks' secrets"
  else
    echo "    state in $PULUMI_BACKEND_URL"
  fi
}

t_all=$(date +%s)
step "host tools" host_tools
step "Docker engine" docker_engine
step "Python environment" python_env
step "the project on the venv's path" project_path
step "console commands" console_scripts
step "Pulumi toolchain" toolchain
step "Copilot CLI" copilot_cli
step "state and passphrase" secrets_home
echo "setup complete in $(( $(date +%s) - t_all ))s"
