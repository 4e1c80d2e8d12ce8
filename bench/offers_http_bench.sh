#!/usr/bin/env bash
# HTTP benchmark of the marketplace search: requests per second of GET /api/v1/offers
# (the default ranking, a logged-in customer, so the anonymous rate limit does not apply)
# beside GET /healthz on the same gpunexd run, with wrk, over OFFERS listed offers.
#
#   bench/offers_http_bench.sh [GPUNEXD_BINARY]   (default build/release/src/platform/gpunexd)
#   env: OFFERS (default 3000), BENCH_SECONDS (10), BENCH_CONNECTIONS (32), BENCH_THREADS (2),
#        HEARTBEAT (agents' heartbeat interval, seconds, default 30)
#
# A throw-away gpunexd (SQLite, loopback, emulated GPUs allowed, benchmarks off so a GPU is
# listed as soon as it is priced) gets the demo provider (scripts/demo_seed.py) with a price
# for the NVIDIA L4; bench/agent_load.py then connects OFFERS simulated agents with one
# emulated L4 each over the real agent protocol, gives each machine its own price between
# 0.30 and 0.56 USDC (--prices) and keeps them connected (--hold). Once search shows them
# all, wrk measures, one after the other:
#   GET /healthz
#   GET /api/v1/offers                                        (first page of 50, ranked)
#   GET /api/v1/offers?gpu_model=l4-24gb&max_price_micro=450000&min_reliability=90
#   GET /api/v1/offers?fields=gpu_model,price_micro,reliability_score,gpus_available,position
#                                                             (the same page, compact)
# and the script prints each rate, the ratios to healthz, and how long one
# GET /api/v1/providers/me/offers (the provider's rank view of all its offers) takes.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
offers=${OFFERS:-3000}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-32}
threads=${BENCH_THREADS:-2}
heartbeat=${HEARTBEAT:-30}
command -v wrk >/dev/null || { echo "wrk is missing: scripts/install-deps.sh installs it" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null || true

work=$(mktemp -d)
pid=""
driver=""
cleanup() {
  if [ -n "$driver" ]; then kill "$driver" 2>/dev/null || true; fi
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  cp "$work/log" /tmp/offers-bench-last.log 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
. bench/lib.sh
start_gpunexd "$bin" "$work" "allow_emulated_gpus = true
[http]
io_threads = 2
worker_threads = 8
max_connections_per_address = 0
[fleet]
heartbeat_interval_s = $heartbeat
offline_after_s = $((heartbeat * 3))
hello_timeout_s = 300
max_machines_per_provider = 1000000
[benchmarks]
enabled = false"
pid=$GPUNEXD_PID
base=$BASE

api() {  # method, path, token, [body]
  curl -fsS -X "$1" "$base$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
    ${4:+-d "$4"}
}
login() {  # email, password → session token
  curl -fsS -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
    -d "{\"email\":\"$1\",\"password\":\"$2\"}" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p'
}

agent_token=$(demo_agent_token)
provider=$(login provider@gpunex.local eight-l4s-in-milan)
api PUT /api/v1/providers/me/prices "$provider" \
  '{"items":[{"gpu_model":"l4-24gb","price_micro":400000}]}' >/dev/null
curl -fsS -X POST "$base/api/v1/auth/signup" -H 'Content-Type: application/json' \
  -d '{"email":"customer@bench.local","password":"amber-lantern-fox","name":"Bench Customer"}' >/dev/null
customer=$(login customer@bench.local amber-lantern-fox)

/usr/bin/python3 bench/agent_load.py --url "$base" --token "$agent_token" --api-token "$provider" \
  --pid "$pid" --steps "$offers" --heartbeat "$heartbeat" --prices 300000:560000 --hold \
  >"$work/driver.log" 2>&1 &
driver=$!
matched() {
  curl -fsS --max-time 30 "$base/api/v1/offers?limit=1" -H "Authorization: Bearer $customer" |
    sed -n 's/.*"matched":\([0-9]*\).*/\1/p'
}
# Until the driver holds its agents (a few may fail: every new machine's hello refreshes
# the whole fleet's reliability, so hellos queue up as the fleet grows) and search shows
# every one it holds.
t0=$(date +%s)
held=""
while true; do
  if ! kill -0 "$driver" 2>/dev/null; then
    echo "the agent driver stopped:" >&2
    cat "$work/driver.log" >&2
    exit 1
  fi
  held=$(sed -n 's/^holding \([0-9]*\) agents.*/\1/p' "$work/driver.log")
  if [ -n "$held" ] && [ "$(matched)" = "$held" ]; then break; fi
  if [ $(($(date +%s) - t0)) -gt $((offers / 5 + 300)) ]; then
    echo "search shows $(matched) offers after $(($(date +%s) - t0)) s; driver:" >&2
    cat "$work/driver.log" >&2
    exit 1
  fi
  sleep 1
done
if [ "$held" -lt $((offers * 9 / 10)) ]; then
  echo "only $held of $offers agents connected:" >&2
  cat "$work/driver.log" >&2
  exit 1
fi
ready_s=$(($(date +%s) - t0))

rps() { awk '/^Requests\/sec:/ {print $2}'; }
run() {  # path, extra wrk args...
  local path=$1
  shift
  local out
  out=$(wrk -t "$threads" -c "$conns" -d "${secs}s" "$@" "$base$path")
  if echo "$out" | grep -q "Non-2xx"; then
    echo "$out" >&2
    echo "non-2xx answers from $path" >&2
    exit 1
  fi
  echo "$out" | rps
}
filters="gpu_model=l4-24gb&max_price_micro=450000&min_reliability=90"
h=$(run /healthz)
o=$(run /api/v1/offers -H "Authorization: Bearer $customer")
f=$(run "/api/v1/offers?$filters" -H "Authorization: Bearer $customer")
fields="fields=gpu_model,price_micro,reliability_score,gpus_available,position"
c=$(run "/api/v1/offers?$fields" -H "Authorization: Bearer $customer")
[ -n "$h" ] && [ -n "$o" ] && [ -n "$f" ] && [ -n "$c" ] || exit 1
filtered=$(api GET "/api/v1/offers?$filters&limit=1" "$customer" |
  sed -n 's/.*"matched":\([0-9]*\).*/\1/p')
page_kb=$(api GET /api/v1/offers "$customer" | wc -c | awk '{printf "%.1f", $1 / 1024}')
compact_kb=$(api GET "/api/v1/offers?$fields" "$customer" | wc -c | awk '{printf "%.1f", $1 / 1024}')
own_s=$(curl -fsS --max-time 600 -o /dev/null -w '%{time_total}' "$base/api/v1/providers/me/offers" \
  -H "Authorization: Bearer $provider")

echo "gpunexd offers HTTP benchmark: $held offers of $offers agents (listed after ${ready_s} s), ${secs}s per endpoint, $conns connections, $threads wrk threads, sqlite, $(nproc) cores"
printf '%-44s %10.0f req/s\n' "GET /healthz" "$h"
printf '%-44s %10.0f req/s  (%s matched, page of 50: %s KiB; bearer session)\n' \
  "GET /api/v1/offers" "$o" "$held" "$page_kb"
printf '%-44s %10.0f req/s  (%s matched)\n' "GET /api/v1/offers?<3 filters>" "$f" "$filtered"
echo "  <3 filters>: $filters"
printf '%-44s %10.0f req/s  (page of 50: %s KiB)\n' "GET /api/v1/offers?<fields>" "$c" "$compact_kb"
echo "  <fields>: $fields"
awk -v h="$h" -v o="$o" -v f="$f" -v c="$c" 'BEGIN {
  printf "%-44s %10.3f\n", "ratio offers / healthz", o / h
  printf "%-44s %10.3f\n", "ratio filtered offers / healthz", f / h
  printf "%-44s %10.3f\n", "ratio compact offers / healthz", c / h }'
printf '%-44s %10.3f s      (one request, %s offers of one model and region)\n' \
  "GET /api/v1/providers/me/offers" "$own_s" "$held"
