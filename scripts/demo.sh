#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs gpunexd on its embedded default
# (SQLite in .demo/) at http://127.0.0.1:8080 with a demo admin, a demo provider and a
# demo agent whose GPUs are EMULATED (two L4s; this machine needs no GPU).
# Stop with Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
scripts/build-web.sh >/dev/null  # the dashboard, embedded in gpunexd
cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/release -j "$(nproc)" --target gpunexd gpunex-agent gpunex

demo=${GPUNEX_DEMO_DIR:-$PWD/.demo}
export GPUNEX_DATA_DIR=${GPUNEX_DATA_DIR:-$demo/data}
export GPUNEX_LISTEN=${GPUNEX_LISTEN:-127.0.0.1:8080}
# Rentals' HTTP ports on their own listener: {rental}-{port}.localhost:8081 (docs/access.md).
export GPUNEX_ACCESS_LISTEN=${GPUNEX_ACCESS_LISTEN:-127.0.0.1:8081}
export GPUNEX_ACCESS_DOMAIN=${GPUNEX_ACCESS_DOMAIN:-localhost}
# The SSH gateway: ssh -p 2222 {rental_id}@127.0.0.1 with a key of the customer's account.
export GPUNEX_SSH_LISTEN=${GPUNEX_SSH_LISTEN:-127.0.0.1:2222}
export GPUNEX_ALLOW_EMULATED_GPUS=true
admin_email=${GPUNEX_DEMO_ADMIN:-admin@gpunex.local}
admin_password=${GPUNEX_DEMO_PASSWORD:-review-queue-keeper}
base=http://$GPUNEX_LISTEN
mkdir -p "$demo"

# A LOCAL Solana test chain (LiteSVM with the real SPL Token programs, tests/solana): USDC
# payouts and top-ups of the demo move test tokens there, never real money.
chain=""
if command -v node >/dev/null && tests/solana/setup.sh >/dev/null 2>&1; then
  coproc CHAIN { exec node tests/solana/rpc-front.mjs --port "${GPUNEX_DEMO_SOLANA_PORT:-8899}" 2>>"$demo/solana.log"; }
  chain=$CHAIN_PID
  read -r -t 30 ready <&"${CHAIN[0]}" || true
  if [ -n "${ready:-}" ]; then
    export GPUNEX_SOLANA_RPC_URL=http://127.0.0.1:${GPUNEX_DEMO_SOLANA_PORT:-8899}
    export GPUNEX_SOLANA_KEYPAIR=$demo/solana-platform-key.json
    /usr/bin/python3 scripts/demo_seed.py "$GPUNEX_SOLANA_RPC_URL" - - chain "$GPUNEX_SOLANA_KEYPAIR"
  fi
fi

build/release/src/platform/gpunexd admin create --email "$admin_email" \
  --password "$admin_password" --name "Demo admin" >/dev/null
build/release/src/platform/gpunexd serve 2>>"$demo/gpunexd.log" &
server=$!
agent=""
engine_dir=""
stop_all() {
  trap - EXIT INT TERM
  kill $agent $server $chain 2>/dev/null
  # Not a bare `wait`: a private engine's dockerd.sh stays a child until it is stopped.
  wait $agent $server $chain 2>/dev/null
  if [ -n "$engine_dir" ]; then src/agent/runtime/testdata/dockerd.sh stop "$engine_dir" >/dev/null 2>&1 || true; fi
  exit 0
}
trap stop_all EXIT INT TERM
for _ in $(seq 100); do curl -fs "$base/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
curl -fs "$base/readyz" >/dev/null || { echo "gpunexd did not start; see $demo/gpunexd.log" >&2; exit 1; }

# The demo agent runs its workloads in the machine's Docker Engine. Where none answers (a
# container or a machine without systemd), the demo starts a private one as the tests do
# (src/agent/runtime/testdata/dockerd.sh: its own network namespace, workloads kept from
# each other and from this host), with the demo rental's image made from the host's
# busybox, so that the rental runs without pulling anything.
docker_socket=/var/run/docker.sock
engine_note="the machine's Docker Engine at $docker_socket"
if ! curl -fs --max-time 5 --unix-socket "$docker_socket" http://docker/_ping >/dev/null 2>&1; then
  engine_note="no Docker Engine answers at $docker_socket, and none could be started: workloads fail (start Docker, or run the demo as root)"
  if [ "$(id -u)" = 0 ] && command -v dockerd >/dev/null; then
    engine_dir=$(mktemp -d /tmp/gpx-demo-XXXXXX)
    if docker_socket=$(src/agent/runtime/testdata/dockerd.sh start "$engine_dir" 2>>"$demo/dockerd.log" | tail -n 1) &&
      src/agent/runtime/testdata/dockerd.sh import-busybox "$engine_dir" docker.io/library/busybox:1.36 >>"$demo/dockerd.log" 2>&1; then
      engine_note="a private Docker Engine the demo started (its log: $engine_dir/dockerd.log), as no engine answered at /var/run/docker.sock"
    else
      src/agent/runtime/testdata/dockerd.sh stop "$engine_dir" >/dev/null 2>&1 || true
      engine_dir=""
      docker_socket=/var/run/docker.sock
    fi
  fi
fi

# The agent lists its machine only once workloads reach neither each other nor this
# host's services (docs/trust.md): with Docker's iptables rules on (the default), that
# takes one rule on the host for the workload bridges (gpxwl*), which the demo adds once
# (a private engine keeps its own).
isolation_note="the demo agent's workload bridges (gpxwl*) are kept from this host: iptables -I INPUT -i gpxwl+ -j REJECT"
[ -z "$engine_dir" ] || isolation_note="the private engine keeps its workloads from each other and from this host in its own network namespace"
if [ -z "$engine_dir" ] && [ -S /var/run/docker.sock ] && command -v iptables >/dev/null; then
  if ! iptables -C INPUT -i gpxwl+ -j REJECT 2>/dev/null; then
    iptables -I INPUT -i gpxwl+ -j REJECT 2>/dev/null ||
      isolation_note="run as root: iptables -I INPUT -i gpxwl+ -j REJECT (the demo agent's machine is listed only then; docs/trust.md)"
  fi
fi

token=$(/usr/bin/python3 scripts/demo_seed.py "$base" "$admin_email" "$admin_password")
GPUNEX_PLATFORM_URL=$base GPUNEX_TOKEN=$token GPUNEX_STATE_DIR=$demo/agent GPUNEX_DOCKER_SOCKET=$docker_socket \
  build/release/src/agent/gpunex-agent run --emulate-gpus "l4-24gb:2" 2>>"$demo/agent.log" &
agent=$!
# A rental of one demo GPU by the demo customer, once the GPUs are offered.
/usr/bin/python3 scripts/demo_seed.py "$base" "$admin_email" "$admin_password" rent \
  2>>"$demo/gpunexd.log" &

cat <<MSG

gpunexd on $base  (data: $GPUNEX_DATA_DIR, logs: $demo/*.log)
  dashboard: $base/
  admin:    $admin_email / $admin_password
  provider: provider@gpunex.local / eight-l4s-in-milan  (its demo agent has 2 EMULATED L4 GPUs,
            priced at 0.45 USDC per GPU-hour: offered once their first benchmark passes)
  customer: customer@gpunex.local / render-farm-at-night  (a balance of 25 USDC; it rents one
            demo GPU once it is offered: see $base/#/rentals)
  rental:   its page (Rentals) opens the container's page on port 8080 (Open), served at
            http://{rental}-8080.localhost:${GPUNEX_ACCESS_LISTEN##*:}/ by the access listener;
            its Terminal opens a shell; with your public key on the Account page,
            ssh -p ${GPUNEX_SSH_LISTEN##*:} {rental_id}@127.0.0.1 reaches it too (the page shows the command)
  market:   $base/#/market   or   curl -s '$base/api/v1/offers?explain=true'
  payouts:  ${GPUNEX_SOLANA_RPC_URL:+USDC on a LOCAL Solana test chain at $GPUNEX_SOLANA_RPC_URL (test tokens):
            the provider is paid there weekly ($base/#/provider/payments), the customer can top
            up ($base/#/balance/top-up), admins run payouts ($base/#/admin/payouts)}
  cli:      build/release/src/cli/gpunex auth login --email customer@gpunex.local
            build/release/src/cli/gpunex rentals list; ... rentals logs -f {rental_id}  (docs/cli.md)
  try:      curl -s $base/api/v1/gpu-models
  engine:   $engine_note
  network:  $isolation_note
Emails wait in the outbox until GPUNEX_SMTP_URL names an SMTP server. Ctrl-C stops
everything.

MSG
wait $server
