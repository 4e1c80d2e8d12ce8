#!/usr/bin/env bash
# Builds the web dashboard: installs its npm packages exactly as package-lock.json pins
# them (npm ci) and writes web/dist, which the next build of gpunexd embeds
# (src/platform/web). Needs Node.js 18 or newer (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/../web"

command -v npm >/dev/null || { echo "build-web: npm not found: run scripts/install-deps.sh" >&2; exit 1; }
# npm ci is skipped when node_modules already matches the lock file.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.gpunex-lock; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.gpunex-lock
fi
npm run build
