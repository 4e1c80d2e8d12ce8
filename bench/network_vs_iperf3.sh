#!/usr/bin/env bash
# The agent's network throughput benchmark next to iperf3, both over loopback, in the
# same run: `gpunex-agent bench network` downloads from and uploads to a throw-away
# gpunexd (HTTP/1.1, the agent token, the benchmark endpoints), iperf3 moves the same
# number of bytes per direction over one TCP stream; prints both figures and the ratio
# ours / iperf3.
#
#   bench/network_vs_iperf3.sh [GPUNEXD_BINARY] [AGENT_BINARY]
#
# Environment: MB (MiB per direction, default 1024, at most 1024), ROUNDS (default 9).
# Each round runs both, ours first in odd rounds and iperf3 first in even ones; loopback
# throughput on a small virtual machine moves by a third from one second to the next, so
# each figure is the median over the rounds, printed with the ratio of the medians and
# the median of the rounds' own ratios.
# Units: Mbit/s = 1e6 bits per second. iperf3's figure is its receiver's
# (end.sum_received); "download" is iperf3 -R (the server sends), "upload" plain iperf3.
# iperf3 moves 1 MiB per system call (-l 1M), as gpunexd does (one 1 MiB pattern buffer
# sent, reads of up to 1 MiB); with its default of 128 KiB it is slower on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/src/platform/gpunexd}
agent_bin=${2:-build/release/src/agent/gpunex-agent}
mb=${MB:-1024}
rounds=${ROUNDS:-9}
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (scripts/install-deps.sh)" >&2; exit 1; }

work=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
. bench/lib.sh
start_gpunexd "$bin" "$work"
pids+=("$GPUNEXD_PID")
base=$BASE
token=$(demo_agent_token)

iperf_port=$((20000 + RANDOM % 20000))
iperf3 -s -p "$iperf_port" >/dev/null 2>&1 &
pids+=($!)
sleep 0.5

echo "network over loopback: gpunex-agent bench network (through gpunexd) vs $(iperf3 --version | head -1 | cut -d' ' -f1,2)"
echo "${mb} MiB per direction, one TCP connection each, $rounds round(s), $(nproc) CPUs"
run_ours() {
  "$agent_bin" bench network --url "$base" --token "$token" --mb "$mb" --seconds 60 --json >"$work/ours.$1.json"
}
run_iperf() {
  iperf3 -c 127.0.0.1 -p "$iperf_port" -n "${mb}M" -l 1M -R -J >"$work/iperf-down.$1.json"
  iperf3 -c 127.0.0.1 -p "$iperf_port" -n "${mb}M" -l 1M -J >"$work/iperf-up.$1.json"
}
for r in $(seq "$rounds"); do
  if [ $((r % 2)) = 1 ]; then run_ours "$r"; run_iperf "$r"; else run_iperf "$r"; run_ours "$r"; fi
done

/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ours, theirs = [], []
for r in range(1, rounds + 1):
    o = json.load(open(f"{work}/ours.{r}.json"))
    ours.append({"down": o["download_mbit_s"], "up": o["upload_mbit_s"]})
    up = json.load(open(f"{work}/iperf-up.{r}.json"))["end"]["sum_received"]["bits_per_second"] / 1e6
    down = json.load(open(f"{work}/iperf-down.{r}.json"))["end"]["sum_received"]["bits_per_second"] / 1e6
    theirs.append({"down": down, "up": up})
print(f"{'metric':28} {'gpunex':>12} {'iperf3':>12} {'ratio':>7} {'rounds':>7}")
for label, k in (("download Mbit/s", "down"), ("upload Mbit/s", "up")):
    a = statistics.median(x[k] for x in ours)
    b = statistics.median(x[k] for x in theirs)
    per_round = statistics.median(x[k] / y[k] for x, y in zip(ours, theirs))
    print(f"{label:28} {a:12.0f} {b:12.0f} {a / b:7.3f} {per_round:7.3f}")
if rounds > 1:
    print("rounds (gpunex / iperf3; odd rounds ran ours first):")
    for i, (a, b) in enumerate(zip(ours, theirs), 1):
        print(f"  {i}: down {a['down']:.0f}/{b['down']:.0f}  up {a['up']:.0f}/{b['up']:.0f}")
PY
