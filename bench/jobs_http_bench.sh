#!/usr/bin/env bash
# HTTP benchmark of the scheduler: jobs submitted and placed per second through
# POST /api/v1/jobs, with GET /healthz measured beside it on the same gpunexd run (alone
# first, then while the jobs are submitted), with wrk, over OFFERS free GPUs.
#
#   bench/jobs_http_bench.sh [GPUNEXD_BINARY]   (default build/release/src/platform/gpunexd)
#   env: OFFERS (simulated agents, one emulated L4 each; default 15000), BENCH_SECONDS (10),
#        BENCH_CONNECTIONS (32, submitting jobs), BENCH_THREADS (2),
#        HEALTHZ_CONNECTIONS (4), HEALTHZ_THREADS (1), HEALTHZ_PACE_MS (0: each healthz
#        connection sends its next request as soon as the answer is in; N: waits N ms
#        first, a probe that leaves the CPUs to the jobs), WORKER_THREADS (gpunexd's
#        [http] worker_threads, 8 as by default), HEARTBEAT (agents' heartbeat, s, 30),
#        CREDIT_MICRO (the customer's credit, 1000000000000; 0: none, so that every job is
#        refused with 422 "balance", which checks the report of failures)
#
# A throw-away gpunexd (SQLite, loopback, emulated GPUs allowed, benchmarks off so a GPU is
# listed as soon as it is priced, the one customer allowed 10 000 queued jobs so that the
# jobs that find no free GPU are queued and counted, not refused) gets the demo provider (scripts/demo_seed.py) with a price
# of 0.40 USDC for the NVIDIA L4; bench/agent_load.py --hold connects OFFERS simulated
# agents with one emulated L4 each over the agent protocol (it gives every agent one GPU)
# and keeps them connected. A customer signs up and the admin credits it 1 000 000 USDC
# (POST /api/v1/admin/credits; a job needs its first hour at max_price_micro, 1 USDC here,
# covered, so this covers every job of a run even were each hour held). Once search lists
# every agent's offer, wrk measures, one after the other:
#   GET /healthz alone                      (HEALTHZ_CONNECTIONS)
#   POST /api/v1/jobs  {gpu_model l4-24gb, gpus 1, max_price_micro 1000000, image}
#                                           (BENCH_CONNECTIONS, bench/jobs_http_bench.lua)
#     and at the same time GET /healthz     (HEALTHZ_CONNECTIONS, a second wrk)
# The jobs are counted afterwards in the database (jobs by state, rentals of jobs) as well
# as by their answers (201 placed / 201 queued / any other status). Every job placed takes
# one GPU: a job answered "queued" found none free (OFFERS too small for the run) and is
# counted apart. Exits 1 on any non-2xx answer or socket error, after the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
offers=${OFFERS:-15000}
secs=${BENCH_SECONDS:-10}
conns=${BENCH_CONNECTIONS:-32}
threads=${BENCH_THREADS:-2}
hconns=${HEALTHZ_CONNECTIONS:-4}
hthreads=${HEALTHZ_THREADS:-1}
hpace=${HEALTHZ_PACE_MS:-0}
workers=${WORKER_THREADS:-8}
heartbeat=${HEARTBEAT:-30}
credit=${CREDIT_MICRO:-1000000000000}
command -v wrk >/dev/null || { echo "wrk is missing: scripts/install-deps.sh installs it" >&2; exit 1; }
ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null || true

work=$(mktemp -d)
pid=""
driver=""
hwrk=""
cleanup() {
  if [ -n "$hwrk" ]; then kill "$hwrk" 2>/dev/null || true; fi
  if [ -n "$driver" ]; then kill "$driver" 2>/dev/null || true; fi
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  wait 2>/dev/null || true
  cp "$work/log" /tmp/jobs-bench-last.log 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
. bench/lib.sh
start_gpunexd "$bin" "$work" "allow_emulated_gpus = true
[http]
io_threads = 2
worker_threads = $workers
max_connections_per_address = 0
[fleet]
heartbeat_interval_s = $heartbeat
offline_after_s = $((heartbeat * 3))
hello_timeout_s = 300
max_machines_per_provider = 1000000
[rentals]
max_queued_jobs_per_customer = 10000
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
customer_id=$(api GET /api/v1/me "$customer" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
admin=$(login admin@bench.local quiet-river-stone)
if [ "$credit" != 0 ]; then
  api POST /api/v1/admin/credits "$admin" \
    "{\"user_id\":\"$customer_id\",\"amount_micro\":$credit,\"reference\":\"jobs bench\"}" >/dev/null
fi

/usr/bin/python3 bench/agent_load.py --url "$base" --token "$agent_token" --api-token "$provider" \
  --pid "$pid" --steps "$offers" --heartbeat "$heartbeat" --hold >"$work/driver.log" 2>&1 &
driver=$!
matched() {
  curl -fsS --max-time 30 "$base/api/v1/offers?limit=1" -H "Authorization: Bearer $customer" |
    sed -n 's/.*"matched":\([0-9]*\).*/\1/p'
}
# Until the driver holds its agents and search lists every one it holds (each offer is one
# free GPU).
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

field() {  # name, "result ..." line → value
  echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1
}
result() { grep '^result ' "$1" || { echo "no result from wrk:" >&2; cat "$1" >&2; exit 1; }; }
healthz() {  # output file
  PACE_MS=$hpace wrk -t "$hthreads" -c "$hconns" -d "${secs}s" --timeout 10s -s bench/jobs_http_bench.lua \
    "$base/healthz" >"$1" 2>&1
}

load0=$(cut -d' ' -f1 /proc/loadavg)
healthz "$work/healthz-alone"
healthz "$work/healthz-load" &
hwrk=$!
JOBS_TOKEN=$customer wrk -t "$threads" -c "$conns" -d "${secs}s" --timeout 10s \
  -s bench/jobs_http_bench.lua "$base/api/v1/jobs" >"$work/jobs" 2>&1
wait "$hwrk"
hwrk=""
load1=$(cut -d' ' -f1 /proc/loadavg)
paced=""
[ "$hpace" = 0 ] || paced=", each request $hpace ms after the last answer"
h0=$(result "$work/healthz-alone")
h1=$(result "$work/healthz-load")
j=$(result "$work/jobs")

# What the database holds once every answer is in.
db_counts=$(/usr/bin/python3 - "$work/data/gpunex.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=30)
states = dict(db.execute("SELECT state, COUNT(*) FROM jobs GROUP BY state").fetchall())
rentals = db.execute("SELECT COUNT(*) FROM rentals WHERE job_id <> ''").fetchone()[0]
first, last = db.execute(
    "SELECT MIN(placed_at), MAX(placed_at) FROM jobs WHERE state = 'placed'").fetchone()
span = (last - first) / 1e6 if first is not None else 0
others = sum(n for s, n in states.items() if s not in ("placed", "queued"))
# Each scheduling round stamps its placements with its own time: the rounds, their size
# and the longest pause between two of them.
rounds = [r[0] for r in db.execute("SELECT placed_at FROM jobs WHERE state = 'placed' "
                                   "GROUP BY placed_at ORDER BY placed_at")]
gap = max((b - a for a, b in zip(rounds, rounds[1:])), default=0) / 1e3
# Placements in each whole second from the first one: the slowest and the fastest second.
times = [r[0] for r in db.execute("SELECT placed_at FROM jobs WHERE state = 'placed'")]
seconds = [0] * int(span)
for t in times:
    k = int((t - first) / 1e6)
    if k < len(seconds):
        seconds[k] += 1
slowest, fastest = (min(seconds), max(seconds)) if seconds else ("-", "-")
per_round = states.get("placed", 0) / len(rounds) if rounds else 0
print(states.get("placed", 0), states.get("queued", 0), others, rentals, f"{span:.3f}",
      len(rounds), f"{per_round:.1f}", f"{gap:.0f}", slowest, fastest)
PY
)
read -r db_placed db_queued db_other db_rentals db_span db_rounds db_per_round db_gap db_slowest db_fastest <<<"$db_counts"
left=$(matched)

jsecs=$(field seconds "$j")
placed_rate=$(awk -v n="$db_placed" -v s="$jsecs" 'BEGIN { printf "%.0f", n / s }')
echo "gpunexd jobs HTTP benchmark: $held free GPUs ($held agents, one emulated L4 each, listed after ${ready_s} s), ${secs}s, $conns connections submitting ($threads wrk threads), healthz $hconns connections ($hthreads thread$paced), worker_threads $workers, sqlite, $(nproc) cores, load average $load0 before the measurement and $load1 after"
line() {  # label, result
  printf '%-40s %9.0f req/s  latency ms p50 %.2f p90 %.2f p99 %.2f p99.9 %.2f max %.2f\n' "$1" \
    "$(field rps "$2")" "$(field p50_ms "$2")" "$(field p90_ms "$2")" "$(field p99_ms "$2")" \
    "$(field p999_ms "$2")" "$(field max_ms "$2")"
}
line "GET /healthz alone" "$h0"
line "POST /api/v1/jobs (answers)" "$j"
line "GET /healthz during the jobs" "$h1"
span_rate=$(awk -v n="$db_placed" -v s="$db_span" 'BEGIN { if (s > 0) printf "%.0f", n / s; else print "-" }')
printf '%-40s %9s placements/s (%s jobs placed in the database over the %s s of wrk; %s/s from the first placement to the last, %s s)\n' \
  "jobs placed" "$placed_rate" "$db_placed" "$jsecs" "$span_rate" "$db_span"
codes=$(field statuses "$j")
printf '%-40s %9s placed, %s queued, %s other 2xx, %s non-2xx%s, %s socket errors (wrk)\n' \
  "answers" "$(field placed "$j")" "$(field queued "$j")" "$(field other2xx "$j")" \
  "$(field non2xx "$j")" "${codes:+ (status:count $codes)}" "$(field errors "$j")"
printf '%-40s %9s placed, %s queued, %s other; %s rentals of jobs; %s offers still free\n' \
  "database" "$db_placed" "$db_queued" "$db_other" "$db_rentals" "$left"
printf '%-40s %9s rounds placed jobs, %s jobs a round on average, longest pause between two %s ms\n' \
  "scheduler rounds" "$db_rounds" "$db_per_round" "$db_gap"
printf '%-40s %9s placements in the slowest whole second, %s in the fastest\n' \
  "placements per second" "$db_slowest" "$db_fastest"
awk -v a="$(field rps "$h1")" -v b="$(field rps "$h0")" 'BEGIN {
  printf "%-40s %9.3f\n", "ratio healthz during / alone", a / b }'

status=0
if [ "$(field non2xx "$j")" != 0 ] || [ "$(field other2xx "$j")" != 0 ]; then
  echo "NON-2XX or unexpected answers from POST /api/v1/jobs: ${codes:-none}; first: $(echo "$j" | sed -n 's/.* sample=//p')" >&2
  status=1
fi
for r in "$h0" "$h1" "$j"; do
  if [ "$(field errors "$r")" != 0 ]; then
    echo "socket errors (connect, read, write, timeout) in a wrk run: $r" >&2
    status=1
  fi
done
if grep -q "Non-2xx" "$work/healthz-alone" "$work/healthz-load"; then
  echo "non-2xx answers from GET /healthz" >&2
  status=1
fi
if [ "$db_queued" != 0 ]; then
  echo "note: $db_queued jobs found no free GPU and stay queued (the sweep plans them again every second): raise OFFERS above the jobs a run submits" >&2
fi
if [ "$db_rentals" != "$db_placed" ]; then
  echo "MISMATCH: $db_placed jobs placed but $db_rentals rentals of jobs" >&2
  status=1
fi
exit $status
