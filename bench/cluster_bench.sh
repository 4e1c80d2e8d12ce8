#!/usr/bin/env bash
# One gpunexd against three on one PostgreSQL database, each configuration behind HAProxy
# (issue 28): agents held with their heartbeats' handling time, then jobs placed a second
# over HTTP, side by side in one run.
#
#   bench/cluster_bench.sh [GPUNEXD_BINARY]   (default build/release/src/platform/gpunexd)
#   env: INSTANCES (the configurations, comma-separated; default 1,3),
#        AGENTS (simulated agents, one emulated L4 each; default 2000),
#        HEARTBEAT (seconds between an agent's heartbeats while they are measured; 5),
#        BENCH_SECONDS (the heartbeat window and the jobs' wrk run; 10),
#        AGENT_TOKENS (agent tokens the agents are spread over; 60),
#        OFFERS (free GPUs for the jobs: the AGENTS machines reconnect and more are added up
#        to OFFERS; default 2000), JOBS_HEARTBEAT (agents' heartbeat during the jobs; 30),
#        CUSTOMERS (customers submitting the jobs, each request the next one's; 12),
#        BENCH_CONNECTIONS (32), BENCH_THREADS (2), WORKER_THREADS (each gpunexd's
#        [http] worker_threads; 8 as by default)
#
# The script starts a throw-away PostgreSQL 15 on loopback (scripts/pg-test-server.sh) and
# stops it at the end. For each configuration it makes a database of its own, starts that
# many gpunexd on it (loopback ports, a data_dir each, emulated GPUs allowed, no limit of
# connections per address since every connection comes from HAProxy, benchmarks off so a
# GPU is listed once priced) and Debian's haproxy in front with deploy/cluster/haproxy.cfg's
# settings (as tests/e2e/test_cluster.py derives them: the shipped defaults and backend,
# balance on the Authorization header, /readyz checks; loopback bind and servers). Then,
# through HAProxy only:
#
# 1. Agents: the demo provider (scripts/demo_seed.py) gets AGENT_TOKENS agent tokens;
#    bench/agent_load.py connects AGENTS agents (agent i with token i mod AGENT_TOKENS,
#    so the proxy's hash spreads them over the instances; a hello refused is tried again
#    1 s later, up to 10 times, as gpunex-agent would, and counted), each sending a heartbeat every
#    HEARTBEAT seconds followed by a ping; the time from a heartbeat's send to its pong is
#    the heartbeat's handling (an agent's messages are handled one at a time, in order).
#    Over a window of BENCH_SECONDS: heartbeats sent and handled a second, p50/p99/max of
#    the handling, agents held, and the CPU of gpunexd, PostgreSQL, HAProxy and the driver.
# 2. Jobs: the driver is stopped and started again with the same machines (and more, up to
#    OFFERS) heartbeating every JOBS_HEARTBEAT s; the provider prices the L4 at 0.40 USDC,
#    CUSTOMERS customers sign up and the admin credits each 1 000 000 USDC; once every
#    instance's search lists every GPU, wrk runs bench/jobs_http_bench.lua against
#    HAProxy's POST /api/v1/jobs, the requests going to the customers in turn, and the
#    jobs are counted in the database (placed, queued, rentals of jobs, rounds).
#
# Prints a table of both configurations. Exits 1 when an instance, HAProxy or the driver
# does not start or stops, when agents fail to connect, on a non-2xx answer or a socket
# error of wrk, or when the rentals do not match the jobs placed (after the table).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/release/src/platform/gpunexd}")
instances=${INSTANCES:-1,3}
agents=${AGENTS:-2000}
heartbeat=${HEARTBEAT:-5}
secs=${BENCH_SECONDS:-10}
ntokens=${AGENT_TOKENS:-60}
offers=${OFFERS:-2000}
jobs_heartbeat=${JOBS_HEARTBEAT:-30}
ncustomers=${CUSTOMERS:-12}
conns=${BENCH_CONNECTIONS:-32}
threads=${BENCH_THREADS:-2}
workers=${WORKER_THREADS:-8}
[ "$offers" -ge "$agents" ] || offers=$agents
heartbeat_s=$(awk -v h="$heartbeat" 'BEGIN { h = int(h + 0.999); print h < 1 ? 1 : h }')  # whole
haproxy=$(command -v haproxy || echo /usr/sbin/haproxy)
for tool in wrk psql "$haproxy"; do
  command -v "$tool" >/dev/null || { echo "$tool is missing: scripts/install-deps.sh installs it" >&2; exit 1; }
done
ulimit -n 65536 2>/dev/null || ulimit -n 16384 2>/dev/null || true

work=$(mktemp -d)
chmod 755 "$work"
pids=()   # gpunexd instances, HAProxy and the driver of the configuration running now
pg_started=""
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ -n "$pg_started" ]; then scripts/pg-test-server.sh stop "$work/pg" || true; fi
  # The logs of the last run, for a look afterwards.
  rm -rf /tmp/cluster-bench-last
  (cd "$work" && find . -type f \( -name '*log' -o -name '*.cfg' -o -name jobs -o -name heartbeats \)) |
    while read -r f; do mkdir -p "/tmp/cluster-bench-last/$(dirname "$f")"; cp "$work/$f" "/tmp/cluster-bench-last/$f" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {  # message, [file to show]
  echo "cluster_bench: $1" >&2
  if [ -n "${2:-}" ]; then tail -n 30 "$2" >&2; fi
  exit 1
}
free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# CPU seconds (user + system) of the processes named, added up; those gone count nothing.
cpu_seconds() {
  local p
  for p in "$@"; do cat "/proc/$p/stat" 2>/dev/null || true; done |
    awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); s += $12 + $13 } END { printf "%.2f", s / hz }'
}
field() {  # name, "result ..." line → value
  echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -1
}

pg_url=$(scripts/pg-test-server.sh start "$work/pg") || fail "PostgreSQL did not start"
pg_started=1
pg_home=$work/pg
if [ -L "$work/pg/server" ]; then pg_home=$(readlink "$work/pg/server"); fi
pg_data=$pg_home/data
postgres_pids() {  # the postmaster and its children (backends, writers)
  local pm
  pm=$(head -1 "$pg_data/postmaster.pid")
  echo "$pm" $(pgrep -P "$pm" || true)
}

status=0
declare -A row_agents row_jobs
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

run_configuration() {  # number of gpunexd instances
  local n=$1 dir="$work/c$1" i port ports=() gp=() db url lb_port lb base
  mkdir -p "$dir"
  db=cluster_$n
  psql -q "$pg_url" -c "CREATE DATABASE $db" >/dev/null
  url=${pg_url%/*}/$db
  for i in $(seq "$n"); do
    port=$(free_port)
    ports+=("$port")
    mkdir -p "$dir/i$i/data"
    cat >"$dir/i$i/gpunexd.toml" <<EOF
listen = "127.0.0.1:$port"
data_dir = "$dir/i$i/data"
database_url = "$url"
allow_emulated_gpus = true
[http]
io_threads = 2
worker_threads = $workers
max_connections_per_address = 0
[fleet]
heartbeat_interval_s = $heartbeat_s
offline_after_s = $((jobs_heartbeat * 3))
hello_timeout_s = 300
max_machines_per_provider = 1000000
[rentals]
max_queued_jobs_per_customer = 10000
[benchmarks]
enabled = false
EOF
  done
  # The first instance's configuration makes the database's tables and the admin.
  env -u GPUNEX_DATABASE_URL "$bin" admin create --email admin@bench.local \
    --password quiet-river-stone --config "$dir/i1/gpunexd.toml" >/dev/null
  for i in $(seq "$n"); do
    env -u GPUNEX_DATABASE_URL "$bin" serve --config "$dir/i$i/gpunexd.toml" 2>"$dir/i$i/log" &
    gp+=("$!")
    pids+=("$!")
  done
  for i in $(seq "$n"); do
    for _ in $(seq 300); do
      curl -fs -o /dev/null "http://127.0.0.1:${ports[i - 1]}/readyz" && break
      kill -0 "${gp[i - 1]}" 2>/dev/null || fail "gpunexd $i of $n stopped" "$dir/i$i/log"
      sleep 0.1
    done
    curl -fs -o /dev/null "http://127.0.0.1:${ports[i - 1]}/readyz" ||
      fail "gpunexd $i of $n is not ready after 30 s" "$dir/i$i/log"
  done

  # HAProxy: deploy/cluster/haproxy.cfg with test_cluster.py's changes for loopback, its
  # connection limits raised to the agents (each holds one connection here).
  lb_port=$(free_port)
  /usr/bin/python3 - "$lb_port" "$((offers + conns + 1000))" "${ports[@]}" >"$dir/haproxy.cfg" <<'PY'
import re, sys
port, maxconn, backends = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
text = open("deploy/cluster/haproxy.cfg", encoding="utf-8").read()
text = re.sub(r"(?m)^\s*log .*\n", "", text)
text = text.replace("    option httplog\n", "")
text = re.sub(r"(?m)^    bind :8080$", f"    bind 127.0.0.1:{port}", text)
text = re.sub(r"(?m)^    server .*\n", "", text)
text = re.sub(r"(?m)^    maxconn \d+$", f"    maxconn {maxconn}", text)
text = text.replace("maxconn 10000", f"maxconn {max(10000, maxconn)}")
text = text.rstrip("\n") + "\n" + "".join(
    f"    server gpunexd-{i + 1} 127.0.0.1:{p} check\n" for i, p in enumerate(backends))
assert f"bind 127.0.0.1:{port}" in text and "balance hdr(Authorization)" in text, text
print(text, end="")
PY
  "$haproxy" -c -q -f "$dir/haproxy.cfg" >"$dir/haproxy.log" 2>&1 ||
    fail "haproxy -c refused the configuration" "$dir/haproxy.log"
  "$haproxy" -db -f "$dir/haproxy.cfg" >>"$dir/haproxy.log" 2>&1 &
  lb=$!
  pids+=("$lb")
  base=http://127.0.0.1:$lb_port
  for _ in $(seq 150); do
    curl -fs -o /dev/null "$base/readyz" && break
    kill -0 "$lb" 2>/dev/null || fail "haproxy stopped" "$dir/haproxy.log"
    sleep 0.1
  done
  curl -fs -o /dev/null "$base/readyz" || fail "HAProxy does not answer /readyz" "$dir/haproxy.log"

  # Retried: an instance busy with agents may fail HAProxy's health check for a while (503).
  api() {  # method, path, token, [body]
    curl -fsS --retry 10 --retry-all-errors --retry-delay 2 -X "$1" "$base$2" -H "Authorization: Bearer $3" -H 'Content-Type: application/json' \
      ${4:+-d "$4"}
  }
  login() {  # email, password → session token
    curl -fsS --retry 10 --retry-all-errors --retry-delay 2 -X POST "$base/api/v1/auth/login" -H 'Content-Type: application/json' \
      -d "{\"email\":\"$1\",\"password\":\"$2\"}" | sed -n 's/.*"token":"\([^"]*\)".*/\1/p'
  }
  local tokens provider admin t c customers="" cid
  # Seeded through one instance: the provider's approval and its first price follow each
  # other faster than another instance's credential cache (up to 1 s) would see the role.
  tokens=$(/usr/bin/python3 scripts/demo_seed.py "http://127.0.0.1:${ports[0]}" admin@bench.local     quiet-river-stone)
  provider=$(login provider@gpunex.local eight-l4s-in-milan)
  admin=$(login admin@bench.local quiet-river-stone)
  for t in $(seq 2 "$ntokens"); do
    tokens+=,$(api POST /api/v1/providers/me/agent-tokens "$provider" "{\"name\":\"bench $t\"}" |
      sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
  done

  # 1. Agents and their heartbeats.
  local seed=$((RANDOM * 32768 + RANDOM)) driver before after line
  local allpg
  /usr/bin/python3 bench/agent_load.py --url "$base" --token "$tokens" --api-token "$provider" \
    --pid "$(IFS=,; echo "${gp[*]}")" --steps "$agents" --heartbeat "$heartbeat" --seed "$seed" \
    --latency-out "$dir/heartbeats" --measure "$secs" --hello-retries 10 --hold >"$dir/driver1.log" 2>&1 &
  driver=$!
  pids+=("$driver")
  # The CPU of every process over the window: from "measuring" to the result.
  # (Hellos are slow on PostgreSQL under load: 20 a second on 2 busy cores; up to 10 minutes.)
  for _ in $(seq $((agents + heartbeat_s * 40 + 6000))); do
    grep -q '^measuring' "$dir/driver1.log" && break
    kill -0 "$driver" 2>/dev/null || fail "the agent driver stopped" "$dir/driver1.log"
    sleep 0.1
  done
  grep -q '^measuring' "$dir/driver1.log" || fail "the agents were not all connected in time" "$dir/driver1.log"
  allpg=$(postgres_pids)
  before="$(cpu_seconds "${gp[@]}") $(cpu_seconds $allpg) $(cpu_seconds "$lb") $(cpu_seconds "$driver") $(date +%s.%N)"
  for _ in $(seq $(((secs + 10) * 10))); do
    [ -s "$dir/heartbeats" ] && break
    kill -0 "$driver" 2>/dev/null || fail "the agent driver stopped" "$dir/driver1.log"
    sleep 0.1
  done
  after="$(cpu_seconds "${gp[@]}") $(cpu_seconds $allpg) $(cpu_seconds "$lb") $(cpu_seconds "$driver") $(date +%s.%N)"
  line=$(cat "$dir/heartbeats")
  [ -n "$line" ] || fail "no heartbeat figures from the driver" "$dir/driver1.log"
  local cpu spread
  cpu=$(awk -v a="$before" -v b="$after" -v s="$secs" 'BEGIN {
    split(a, x, " "); split(b, y, " "); t = y[5] - x[5]
    printf "%.0f/%.0f/%.0f/%.0f", 100 * (y[1] - x[1]) / t, 100 * (y[2] - x[2]) / t,
      100 * (y[3] - x[3]) / t, 100 * (y[4] - x[4]) / t }')
  # Agents each instance took (its log's agent.connected lines).
  spread=$(for i in $(seq "$n"); do grep -c '"agent.connected"' "$dir/i$i/log" || true; done | paste -sd/)
  row_agents[$n]="$line cpu=$cpu spread=$spread"
  if [ "$(field held "$line")" != "$agents" ]; then
    echo "cluster_bench: $n instance(s): only $(field held "$line") of $agents agents held; driver:" >&2
    grep -v '^result' "$dir/driver1.log" | tail -n 5 >&2
    status=1
  fi
  kill "$driver" 2>/dev/null || true
  wait "$driver" 2>/dev/null || true

  # 2. Jobs over HTTP.
  api PUT /api/v1/providers/me/prices "$provider" \
    '{"items":[{"gpu_model":"l4-24gb","price_micro":400000}]}' >/dev/null
  for c in $(seq "$ncustomers"); do
    curl -fsS --retry 10 --retry-all-errors --retry-delay 2 -X POST "$base/api/v1/auth/signup" -H 'Content-Type: application/json' \
      -d "{\"email\":\"customer$c@bench.local\",\"password\":\"amber-lantern-fox\",\"name\":\"Bench Customer $c\"}" >/dev/null
    t=$(login "customer$c@bench.local" amber-lantern-fox)
    cid=$(api GET /api/v1/me "$t" | sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
    api POST /api/v1/admin/credits "$admin" \
      "{\"user_id\":\"$cid\",\"amount_micro\":1000000000000,\"reference\":\"cluster bench $c\"}" >/dev/null
    customers+=${customers:+,}$t
  done
  /usr/bin/python3 bench/agent_load.py --url "$base" --token "$tokens" --api-token "$provider" \
    --pid "$(IFS=,; echo "${gp[*]}")" --steps "$offers" --heartbeat "$jobs_heartbeat" \
    --settle 2 --seed "$seed" --hello-retries 10 --hold >"$dir/driver2.log" 2>&1 &
  driver=$!
  pids+=("$driver")
  matched() {  # instance port → offers its search lists
    curl -fsS --max-time 30 "http://127.0.0.1:$1/api/v1/offers?limit=1" \
      -H "Authorization: Bearer ${customers%%,*}" | sed -n 's/.*"matched":\([0-9]*\).*/\1/p'
  }
  local t0 held="" ready
  t0=$(date +%s)
  while true; do
    kill -0 "$driver" 2>/dev/null || fail "the agent driver stopped" "$dir/driver2.log"
    held=$(sed -n 's/^holding \([0-9]*\) agents.*/\1/p' "$dir/driver2.log")
    if [ -n "$held" ]; then
      ready=1
      for port in "${ports[@]}"; do [ "$(matched "$port")" = "$held" ] || ready=""; done
      [ -n "$ready" ] && break
    fi
    [ $(($(date +%s) - t0)) -le $((offers / 5 + 300)) ] ||
      fail "after $(($(date +%s) - t0)) s the driver holds ${held:-not yet all of the} $offers agents or search does not list their GPUs" "$dir/driver2.log"
    sleep 1
  done
  [ "$held" = "$offers" ] || { echo "cluster_bench: $n instance(s): $held of $offers agents for the jobs" >&2; status=1; }
  JOBS_TOKEN=$customers wrk -t "$threads" -c "$conns" -d "${secs}s" --timeout 10s \
    -s bench/jobs_http_bench.lua "$base/api/v1/jobs" >"$dir/jobs" 2>&1
  line=$(grep '^result ' "$dir/jobs") || fail "no result from wrk" "$dir/jobs"
  local counts
  counts=$(psql -qAt -F' ' "$url" -c "
    SELECT (SELECT COUNT(*) FROM jobs WHERE state = 'placed'),
           (SELECT COUNT(*) FROM jobs WHERE state = 'queued'),
           (SELECT COUNT(*) FROM jobs WHERE state NOT IN ('placed', 'queued')),
           (SELECT COUNT(*) FROM rentals WHERE job_id <> ''),
           (SELECT COUNT(DISTINCT placed_at) FROM jobs WHERE state = 'placed'),
           (SELECT COALESCE(MAX(placed_at) - MIN(placed_at), 0) FROM jobs WHERE state = 'placed')")
  local placed queued other rentals rounds span_us
  read -r placed queued other rentals rounds span_us <<<"$counts"
  # Requests each instance answered on the jobs' route (its /metrics).
  local jspread
  jspread=$(for port in "${ports[@]}"; do
    curl -fsS "http://127.0.0.1:$port/metrics" |
      awk '/^(gpunex_)?http_requests_total\{/ && /method="POST"/ && /route="\/api\/v1\/jobs"/ { s += $NF }
           END { print s + 0 }'
  done | paste -sd/)
  row_jobs[$n]="$line db_placed=$placed db_queued=$queued db_other=$other rentals=$rentals rounds=$rounds span_us=$span_us held=$held jspread=$jspread"
  if [ "$(field non2xx "$line")" != 0 ] || [ "$(field other2xx "$line")" != 0 ] ||
     [ "$(field errors "$line")" != 0 ]; then
    echo "cluster_bench: $n instance(s): jobs answered otherwise than 201 or socket errors: $(field statuses "$line"); first: $(echo "$line" | sed -n 's/.* sample=//p')" >&2
    status=1
  fi
  if [ "$rentals" != "$placed" ]; then
    echo "cluster_bench: $n instance(s): $placed jobs placed but $rentals rentals of jobs" >&2
    status=1
  fi
  [ "$queued" = 0 ] || echo "cluster_bench: $n instance(s): note: $queued jobs found no free GPU (raise OFFERS)" >&2

  # Stop this configuration before the next one.
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}

IFS=, read -r -a configs <<<"$instances"
for n in "${configs[@]}"; do
  run_configuration "$n"
done

echo "gpunexd cluster benchmark: $(IFS=/; echo "${configs[*]}") gpunexd on one PostgreSQL 15 behind HAProxy, all on loopback, $(nproc) cores; load average $load_before before the run, $(cut -d' ' -f1-3 /proc/loadavg) after"
echo
echo "Agents: $agents agents over $ntokens agent tokens, a heartbeat (then a ping) every ${heartbeat} s each, measured over ${secs} s"
printf '%-10s %-9s %-8s %-13s %-9s %-9s %-10s %-22s %-30s\n' instances "held" "retried" "agents each" "sent/s" "handled/s" "unanswered" "handling p50/p99/max ms" "CPU % gpunexd/pg/haproxy/driver"
for n in "${configs[@]}"; do
  r=${row_agents[$n]}
  c=$(field cpu "$r")
  printf '%-10s %-9s %-8s %-13s %-9s %-9s %-10s %-22s %-30s\n' "$n" "$(field held "$r")/$(field agents "$r")" "$(field retries "$r")" \
    "$(field spread "$r")" "$(field sent_per_s "$r")" "$(field handled_per_s "$r")" "$(field unanswered "$r")" \
    "$(field p50_ms "$r")/$(field p99_ms "$r")/$(field max_ms "$r")" "$c"
done
echo
echo "Jobs: POST /api/v1/jobs through HAProxy, ${secs} s, $conns connections ($threads wrk threads), $ncustomers customers in turn, over $offers free GPUs (heartbeats every ${jobs_heartbeat} s)"
printf '%-10s %-12s %-14s %-16s %-18s %-14s %-16s %-16s\n' instances "placed/s" "answers/s" "job p50/p99 ms" "placed/queued/db" "rounds (jobs)" "answers each" "non-2xx/errors"
for n in "${configs[@]}"; do
  r=${row_jobs[$n]}
  s=$(field seconds "$r")
  printf '%-10s %-12s %-14s %-16s %-18s %-14s %-16s %-16s\n' "$n" \
    "$(awk -v p="$(field db_placed "$r")" -v s="$s" 'BEGIN { printf "%.0f", p / s }')" \
    "$(awk -v x="$(field rps "$r")" 'BEGIN { printf "%.0f", x }')" \
    "$(field p50_ms "$r")/$(field p99_ms "$r")" \
    "$(field placed "$r")/$(field queued "$r")/$(field db_placed "$r")" \
    "$(field rounds "$r") ($(awk -v p="$(field db_placed "$r")" -v k="$(field rounds "$r")" 'BEGIN { if (k) printf "%.1f", p / k; else print "-" }'))" \
    "$(field jspread "$r")" "$(field non2xx "$r")/$(field errors "$r")"
done
if [ "${#configs[@]}" -ge 2 ]; then
  first=${configs[0]} last=${configs[${#configs[@]} - 1]}
  echo
  awk -v a="$(field handled_per_s "${row_agents[$first]}")" -v b="$(field handled_per_s "${row_agents[$last]}")" \
    -v f="$first" -v l="$last" 'BEGIN { if (a > 0) printf "heartbeats handled a second, %s instances / %s: %.2f\n", l, f, b / a }'
  pa=$(field db_placed "${row_jobs[$first]}")
  pb=$(field db_placed "${row_jobs[$last]}")
  awk -v a="$pa" -v b="$pb" -v f="$first" -v l="$last" \
    'BEGIN { if (a > 0) printf "jobs placed, %s instances / %s: %.2f\n", l, f, b / a }'
fi
exit $status
