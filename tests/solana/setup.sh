#!/usr/bin/env bash
# Installs the npm packages of the Solana test front (tests/solana) exactly as
# package-lock.json pins them (npm ci), when node_modules is missing or was installed from
# another package-lock.json. Idempotent and quiet: prints nothing when there is nothing to
# do or the install succeeds; on failure prints npm's output and exits non-zero.
# Safe to run from parallel tests: one install at a time (flock), the others wait for it.
# Needs Node.js 20 or newer (litesvm's native module) and npm.
set -euo pipefail
cd "$(dirname "$0")"

command -v node >/dev/null && command -v npm >/dev/null ||
  { echo "tests/solana/setup.sh: node and npm are needed: run scripts/install-deps.sh" >&2; exit 1; }
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 20 ]; then
  echo "tests/solana/setup.sh: Node.js $(node --version) is too old: litesvm needs 20 or newer" >&2
  exit 1
fi

# The copy of the lock file that node_modules was installed from.
stamp=node_modules/.gpunex-lock
installed() { [ -f node_modules/.package-lock.json ] && cmp -s package-lock.json "$stamp"; }

installed && exit 0
exec 9>"${TMPDIR:-/tmp}/gpunex-solana-setup-$(id -u).lock"
flock 9
installed && exit 0  # another run installed it while this one waited

log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! npm ci --no-audit --no-fund >"$log" 2>&1; then
  cat "$log" >&2
  echo "tests/solana/setup.sh: npm ci failed" >&2
  exit 1
fi
cp package-lock.json "$stamp"
