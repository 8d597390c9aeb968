# Source this file (". scripts/env.sh") to use the project's Pulumi toolchain and settings.
# Every value can be overridden by exporting it before sourcing.
_agensh_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

export AGENSH_CACHE="${AGENSH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/agensh}"
export AGENSH_HOME="${AGENSH_HOME:-$HOME/.agensh}"
# The built toolchain lives outside the checkout, keyed by the pinned versions and the sources in toolchain/ (their
# comments and blank lines left out, so a reworded comment does not rebuild it).
AGENSH_TOOLCHAIN_KEY="$(cd "$_agensh_root" && find scripts/setup/versions.env toolchain -type f ! -name '*_test.go' ! -name '*.md' | sort |
  xargs cat | grep -v '^[[:space:]]*\(#.*\)\?$' | sha256sum | cut -c1-12)"
export AGENSH_TOOLCHAIN="${AGENSH_TOOLCHAIN:-$AGENSH_CACHE/toolchain/$AGENSH_TOOLCHAIN_KEY}"
if [ -x "$AGENSH_TOOLCHAIN/bin/pulumi" ]; then
  case ":$PATH:" in *":$AGENSH_TOOLCHAIN/bin:"*) ;; *) export PATH="$AGENSH_TOOLCHAIN/bin:$PATH" ;; esac
  export PULUMI_HOME="${PULUMI_HOME:-$AGENSH_TOOLCHAIN/home}"
fi

export PULUMI_BACKEND_URL="${PULUMI_BACKEND_URL:-file://$AGENSH_HOME/state}"
if [ -z "${PULUMI_CONFIG_PASSPHRASE+x}" ] && [ -z "${PULUMI_CONFIG_PASSPHRASE_FILE:-}" ]; then
  export PULUMI_CONFIG_PASSPHRASE_FILE="$AGENSH_HOME/passphrase"
fi
# A `pulumi preview` or `pulumi up` typed in this shell runs the policy pack as `make preview` and `make up` do: the CLI
# reads any flag from PULUMI_OPTION_<FLAG>, and the pack finds the stack's own numbers by itself.
export PULUMI_OPTION_POLICY_PACK="${PULUMI_OPTION_POLICY_PACK:-$_agensh_root/policies}"
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK=true
unset _agensh_root
