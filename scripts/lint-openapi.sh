#!/usr/bin/env bash
# Lints the API's description, docs/openapi.yaml, with @redocly/cli at the version
# tests/openapi/package-lock.json pins (its rules: tests/openapi/redocly.yaml). Installs
# that version first when tests/openapi/node_modules is missing or was installed from
# another lock file (npm ci). Prints the linter's findings and exits non-zero on any.
# Needs Node.js 18.17 or newer and npm (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=tests/openapi

command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "lint-openapi.sh: node and npm are needed: run scripts/install-deps.sh" >&2; exit 1; }

# The copy of the lock file that node_modules was installed from.
stamp=$dir/node_modules/.gpunex-lock
installed() { [ -f "$dir/node_modules/.package-lock.json" ] && cmp -s "$dir/package-lock.json" "$stamp"; }
if ! installed; then
  exec 9>"${TMPDIR:-/tmp}/gpunex-openapi-setup-$(id -u).lock"
  flock 9
  if ! installed; then
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    if ! (cd "$dir" && npm ci --no-audit --no-fund) >"$log" 2>&1; then
      cat "$log" >&2
      echo "lint-openapi.sh: npm ci failed in $dir" >&2
      exit 1
    fi
    cp "$dir/package-lock.json" "$stamp"
  fi
fi

# No telemetry and no update check: the lint needs no network.
REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true \
  "$dir/node_modules/.bin/redocly" lint docs/openapi.yaml --config "$dir/redocly.yaml" \
  --format=stylish
