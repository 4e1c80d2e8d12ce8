#!/usr/bin/env bash
# A weekly payout run of PAYOUTS Solana payouts against the LiteSVM test node
# (bench/payouts_bench.cc does the run; this starts the node and funds the wallet).
#
#   bench/payouts_bench.sh [PAYOUTS_BENCH_BINARY]   (default build/release/bench/payouts_bench)
#   env: PAYOUTS (10000), AMOUNT_MICRO (60000000: payout i is AMOUNT_MICRO + i), BATCH (200),
#        CHECK (all, or N recipients read back), PERF (set: perf record -g the bench into
#        PERF_DATA, default /tmp/payouts-bench.perf.data), FRONT_PROF (a directory: the node
#        writes a V8 CPU profile there)
#
# It installs the node's packages (tests/solana/setup.sh), starts
# `node tests/solana/rpc-front.mjs --port 0`, makes the platform's wallet there
# (test_newWallet) and writes its key as a Solana CLI key file of mode 0600, funds it with
# the SOL for PAYOUTS new token accounts and fees (PAYOUTS × (2 039 280 + 5 000) lamports,
# plus the 1 SOL a new wallet has) and exactly the USDC of the payouts, and runs the
# benchmark with the node's URL. Afterwards it checks on the node that each payout landed
# in exactly one transaction (the memos), that no transaction failed, and that the wallet's
# USDC is spent to the last micro-USDC. Exit 1 when a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/release/bench/payouts_bench}
n=${PAYOUTS:-10000}
amount=${AMOUNT_MICRO:-60000000}
[ -x "$bin" ] || { echo "no benchmark binary at $bin" >&2; exit 1; }
tests/solana/setup.sh

work=$(mktemp -d)
front_pid=""
cleanup() {
  [ -n "$front_pid" ] && kill "$front_pid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

front_args=()
if [ -n "${FRONT_PROF:-}" ]; then
  mkdir -p "$FRONT_PROF"
  front_args=(--cpu-prof --cpu-prof-dir="$FRONT_PROF")
fi
node "${front_args[@]}" tests/solana/rpc-front.mjs --port 0 >"$work/front.out" 2>"$work/front.log" &
front_pid=$!
for _ in $(seq 100); do
  [ -s "$work/front.out" ] && break
  sleep 0.1
done
[ -s "$work/front.out" ] || { echo "the Solana test node did not start:" >&2; cat "$work/front.log" >&2; exit 1; }
read -r port mint < <(python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); print(d["port"], d["mint"])' <"$work/front.out")
url=http://127.0.0.1:$port

# rpc METHOD PARAMS_JSON -> the result as JSON on stdout
rpc() {
  curl -sS --max-time 300 -H 'Content-Type: application/json' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":$2}" "$url" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); e=d.get("error")
if e: sys.exit("rpc error: %s" % e)
print(json.dumps(d["result"]))'
}

wallet=$(rpc test_newWallet '[]')
pub=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["public_key"])' "$wallet")
(umask 077 && python3 -c 'import json,sys; print(json.dumps(json.loads(sys.argv[1])["secret_key"]))' "$wallet" >"$work/platform-key.json")
chmod 600 "$work/platform-key.json"
lamports=$((n * (2039280 + 5000)))
usdc=$((n * amount + n * (n - 1) / 2))
rpc test_airdrop "[\"$pub\", $lamports]" >/dev/null
rpc test_mintUsdc "[\"$pub\", $usdc]" >/dev/null
echo "platform wallet $pub on $url: funded with $lamports lamports (+1 SOL) and $usdc micro-USDC"

bench=("$bin")
if [ -n "${PERF:-}" ]; then
  bench=(perf record -g -o "${PERF_DATA:-/tmp/payouts-bench.perf.data}" -- "$bin")
fi
status=0
RPC_URL=$url KEYPAIR=$work/platform-key.json MINT=$mint PAYOUTS=$n AMOUNT_MICRO=$amount FRONT_PID=$front_pid \
  "${bench[@]}" 2>"$work/bench.log" || status=$?
# The engine's log (JSON lines) counted by event; anything else on stderr as it is.
python3 - "$work/bench.log" <<'PY'
import collections, json, sys
events = collections.Counter()
for line in open(sys.argv[1], errors="replace"):
    try:
        events[json.loads(line)["event"]] += 1
    except (ValueError, KeyError, TypeError):
        sys.stderr.write(line)
if events:
    print("log: " + ", ".join("%s %d" % kv for kv in sorted(events.items())))
PY

# On the node: one landed transaction per payout, none failed, the USDC all paid out.
rpc test_transactions '[]' >"$work/txs.json"
rpc test_sends '[]' >"$work/sends.json"
left=$(rpc test_tokenBalance "[\"$pub\"]")
python3 - "$work/txs.json" "$work/sends.json" "$left" "$n" <<'PY' || status=1
import collections, json, sys
txs = json.load(open(sys.argv[1]))
sends = json.load(open(sys.argv[2]))
left, n = json.loads(sys.argv[3]), int(sys.argv[4])
memos = collections.Counter(t["memo"] for t in txs if (t["memo"] or "").startswith("gpunex payout "))
failed = sum(1 for t in txs if t["err"] is not None)
twice = sum(1 for c in memos.values() if c > 1)
outcomes = collections.Counter(s["outcome"] for s in sends["sends"])
print("node: %d sends (%s); %d transactions landed, %d failed; %d payouts landed, %d of them "
      "more than once; platform USDC left %s" % (
          sends["count"], ", ".join("%s %d" % kv for kv in sorted(outcomes.items())), len(txs),
          failed, len(memos), twice, left))
ok = len(memos) == n and twice == 0 and failed == 0 and left == "0"
if not ok:
    print("FAILED: the node does not show every payout landed exactly once", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
exit "$status"
