#!/usr/bin/env bash
# The agent's resident memory and CPU use while idle and connected: starts a throw-away
# gpunexd and one gpunex-agent with emulated GPUs (heartbeat every 10 s), lets it settle,
# then samples the agent over SECONDS (default 60).
#
#   bench/agent_idle.sh [GPUNEXD_BINARY] [AGENT_BINARY]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
agent_bin=${2:-build/release/src/agent/gpunex-agent}
secs=${SECONDS_TO_SAMPLE:-60}

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
. bench/lib.sh
start_gpunexd "$bin" "$work" "allow_emulated_gpus = true"
pids+=("$GPUNEXD_PID")
base=$BASE
token=$(demo_agent_token)
GPUNEX_PLATFORM_URL=$base GPUNEX_TOKEN=$token GPUNEX_STATE_DIR=$work/agent \
  GPUNEX_DOCKER_SOCKET=$work/no-docker.sock "$agent_bin" run --emulate-gpus "h100-sxm-80gb:8" 2>"$work/agent.log" &
agent=$!
pids+=($agent)
sleep 5
grep -q '"event":"agent.connected"' "$work/agent.log" || { echo "the agent did not connect" >&2; cat "$work/agent.log" >&2; exit 1; }

# CPU time in nanoseconds (schedstat), finer than clock ticks.
cpu_ns() { awk '{print $1}' "/proc/$agent/schedstat"; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$agent/status"; }
t0=$(cpu_ns)
max=0
for _ in $(seq "$secs"); do
  r=$(rss)
  [ "$r" -gt "$max" ] && max=$r
  sleep 1
done
t1=$(cpu_ns)
echo "gpunex-agent idle and connected: ${secs}s, 8 emulated GPUs, heartbeat every 10 s, no Docker engine"
awk -v m="$max" -v d="$((t1 - t0))" -v s="$secs" 'BEGIN {
  printf "resident memory (max)   %8.1f MiB\n", m / 1024
  printf "CPU                     %8.4f %% of one core (%.1f ms in %d s)\n", 100 * d / 1e9 / s, d / 1e6, s
}'
