#!/usr/bin/env bash
# HTTP benchmark of gpunexd: requests per second for GET /healthz and for an authenticated
# read of GET /api/v1/provider-applications, on the same run, and their ratio.
#
#   bench/http_bench.sh [GPUNEXD_BINARY]     (default build/release/src/platform/gpunexd)
#   env: BENCH_SECONDS (default 10), BENCH_CONNECTIONS (default 32), BENCH_THREADS (default 2),
#        GPUNEX_DATABASE_URL (optional: benchmark on PostgreSQL),
#        CREDENTIAL_CACHE_MS (default 1000: [auth] credential_cache_ms; 0 asks the store on
#        every request)
#
# The server runs on loopback with a fresh SQLite database (or the given PostgreSQL
# database); the authenticated read lists a provider's own 1 application.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-32}
threads=${BENCH_THREADS:-2}
command -v wrk >/dev/null || { echo "wrk is missing: scripts/install-deps.sh installs it" >&2; exit 1; }

work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; cp "$work/log" /tmp/bench-last.log 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
cat >"$work/gpunexd.toml" <<TOML
listen = "127.0.0.1:0"
data_dir = "$work/data"
log_level = "info"
[http]
io_threads = 2
worker_threads = 8
[auth]
credential_cache_ms = ${CREDENTIAL_CACHE_MS:-1000}
TOML
"$bin" serve --config "$work/gpunexd.toml" 2>"$work/log" &
pid=$!
for _ in $(seq 100); do
  port=$(grep -o '"event":"http.listening"[^}]*"port":[0-9]*' "$work/log" 2>/dev/null | grep -o '[0-9]*$' || true)
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "gpunexd did not start:" >&2; cat "$work/log" >&2; exit 1; }
base=http://127.0.0.1:$port

post() { curl -fsS -X POST "$base$1" -H 'Content-Type: application/json' "${@:3}" -d "$2"; }
post /api/v1/auth/signup '{"email":"bench@example.com","password":"bench-password","name":"Bench"}' >/dev/null
token=$(post /api/v1/auth/login '{"email":"bench@example.com","password":"bench-password"}' |
  sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
post /api/v1/provider-applications \
  '{"contact":{"full_name":"Bench","email":"bench@example.com"},"gpus":[{"model":"l4-24gb","quantity":1}]}' \
  -H "Authorization: Bearer $token" >/dev/null

rps() {  # wrk output → requests per second
  awk '/^Requests\/sec:/ {print $2}'
}
run() {  # path, extra wrk args...
  local path=$1
  shift
  wrk -t "$threads" -c "$conns" -d "${secs}s" "$@" "$base$path"
}

healthz_out=$(run /healthz)
apps_out=$(run /api/v1/provider-applications -H "Authorization: Bearer $token")
for out in "$healthz_out" "$apps_out"; do
  if echo "$out" | grep -q "Non-2xx"; then echo "$out" >&2; echo "non-2xx answers" >&2; exit 1; fi
done
h=$(echo "$healthz_out" | rps)
a=$(echo "$apps_out" | rps)
echo "gpunexd HTTP benchmark: ${secs}s per endpoint, $conns connections, $threads wrk threads, backend ${GPUNEX_DATABASE_URL:+postgresql}${GPUNEX_DATABASE_URL:-sqlite}, $(nproc) cores"
printf 'GET /healthz                          %10.0f req/s\n' "$h"
printf 'GET /api/v1/provider-applications     %10.0f req/s  (bearer session, credential cache %s ms)\n' "$a" "${CREDENTIAL_CACHE_MS:-1000}"
awk -v h="$h" -v a="$a" 'BEGIN { printf "ratio authenticated/healthz           %10.3f\n", a / h }'
