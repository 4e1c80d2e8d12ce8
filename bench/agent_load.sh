#!/usr/bin/env bash
# How many concurrent agent connections with heartbeats one gpunexd holds: starts a
# throw-away gpunexd (SQLite) and runs bench/agent_load.py against it in growing steps.
#
#   bench/agent_load.sh [GPUNEXD_BINARY]   env: STEPS (default 250,500,1000,2000),
#                                            HEARTBEAT (seconds, default 10)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
steps=${STEPS:-250,500,1000,2000}
heartbeat=${HEARTBEAT:-10}
ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null || true

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
. bench/lib.sh
start_gpunexd "$bin" "$work" "allow_emulated_gpus = true
[http]
max_connections_per_address = 0
[fleet]
max_machines_per_provider = 1000000
heartbeat_interval_s = $heartbeat
offline_after_s = $((heartbeat * 3))"
pid=$GPUNEXD_PID
base=$BASE
token=$(demo_agent_token)
session=$(curl -fsS -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
  -d '{"email":"provider@gpunex.local","password":"eight-l4s-in-milan"}' |
  sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
echo "gpunexd agent-connection benchmark: SQLite, $(nproc) cores, one process driving all agents"
/usr/bin/python3 bench/agent_load.py --url "$base" --token "$token" --api-token "$session" \
  --pid "$pid" --steps "$steps" --heartbeat "$heartbeat"
