# Shared by the bench/ scripts that need a throw-away gpunexd; sourced, not run.
#
#   start_gpunexd BINARY WORK_DIR [EXTRA_TOML]
#
# Writes WORK_DIR/gpunexd.toml (loopback on a free port, SQLite under WORK_DIR/data, then
# EXTRA_TOML), creates the admin admin@bench.local, starts `gpunexd serve` in the
# background with its log in WORK_DIR/log, and waits for it to listen. Sets GPUNEXD_PID
# and BASE (http://127.0.0.1:PORT); the caller stops the process. Exits when it does not
# start.
#
#   demo_agent_token
#
# Seeds the demo provider (scripts/demo_seed.py) on BASE and prints an agent token of it.

start_gpunexd() {
  local bin=$1 work=$2 extra=${3:-} port=""
  printf 'listen = "127.0.0.1:0"\ndata_dir = "%s/data"\n%s\n' "$work" "$extra" >"$work/gpunexd.toml"
  "$bin" admin create --email admin@bench.local --password quiet-river-stone \
    --config "$work/gpunexd.toml" >/dev/null
  "$bin" serve --config "$work/gpunexd.toml" 2>"$work/log" &
  GPUNEXD_PID=$!
  for _ in $(seq 100); do
    port=$(grep -o '"event":"gpunexd.started"[^}]*"port":[0-9]*' "$work/log" 2>/dev/null |
      grep -o '[0-9]*$' || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { echo "gpunexd did not start" >&2; cat "$work/log" >&2; exit 1; }
  BASE=http://127.0.0.1:$port
}

demo_agent_token() {
  /usr/bin/python3 scripts/demo_seed.py "$BASE" admin@bench.local quiet-river-stone
}
