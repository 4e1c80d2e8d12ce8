#!/usr/bin/env bash
# A private Docker engine for tests: everything it owns lives under one directory, it
# listens only on its own unix socket, it creates no docker0 bridge, and it runs in a
# network namespace of its own (named after DIR, kept in DIR/netns), so that its iptables
# rules, bridges and containers are its own: several can run beside each other and beside
# a host dockerd, and nothing of the machine running the tests is reachable from its
# containers. Nothing leaves the namespace (it has no link out but loopback); a test that
# needs a service of the machine in there forwards its port (tests/e2e/dockerenv.py).
# Containers with NetworkMode host share the namespace, not the machine's network.
#
# GPUNEX_TEST_DOCKERD_NETWORK chooses how the engine isolates workloads
# (src/agent/isolation/isolation_check.h checks exactly this):
#   isolated (default)  Docker's iptables rules, and workload bridges (gpxwl*) kept from
#                       the host's services: iptables -I INPUT -i gpxwl+ -j REJECT, the rule
#                       docs/trust.md asks providers for;
#   docker              Docker's iptables rules only: networks are kept from each other,
#                       the host's services are not;
#   open                --iptables=false with IP forwarding on: nothing is kept from
#                       anything (the engine a probe of issue 24 found).
#
#   dockerd.sh start DIR                 start dockerd under DIR; prints DIR/docker.sock
#   dockerd.sh stop DIR                  stop it, unmount what is left, remove DIR and the
#                                        network namespace
#   dockerd.sh import-busybox DIR REF [--tree TREE] [--change INSTRUCTION]... [FILE...]
#                                        import an image REF made of the host's static
#                                        busybox (no registry involved), and of the host's
#                                        FILEs (programs) at their paths with the shared
#                                        libraries they load; then TREE's contents copied
#                                        over it with their owners and modes (its
#                                        etc/passwd and etc/group replace the root-only
#                                        ones); each --change a Dockerfile instruction
#                                        for the image's config (docker import -c), such as
#                                        'USER 1000'
#
# Needs root, /usr/sbin/dockerd (or $DOCKERD), the docker CLI, ip (iproute2), nsenter and
# iptables. Exits non-zero with the reason on stderr when the engine cannot start.
set -euo pipefail
# ip, iptables and sysctl live in sbin, which a test runner's PATH may leave out.
PATH=$PATH:/usr/sbin:/sbin

die() {
  echo "dockerd.sh: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start DIR | stop DIR |" \
    "import-busybox DIR REF [--tree TREE] [--change INSTRUCTION]... [FILE...]" >&2
  exit 2
}

cli() {
  docker -H "unix://$DIR/docker.sock" "$@"
}

# Runs a command in the engine's network namespace (only that: the mounts stay the
# machine's, so the engine's are visible to stop()).
in_netns() {
  nsenter "--net=/run/netns/$(cat "$DIR/netns")" "$@"
}

start() {
  [[ $(id -u) -eq 0 ]] || die "must run as root to start dockerd"
  local dockerd=${DOCKERD:-}
  if [[ -z $dockerd ]]; then
    dockerd=$(command -v dockerd || true)
    [[ -n $dockerd ]] || dockerd=/usr/sbin/dockerd
  fi
  [[ -x $dockerd ]] || die "dockerd not found (set DOCKERD)"
  command -v docker >/dev/null || die "the docker CLI is not installed"
  local tool
  for tool in ip nsenter iptables; do
    command -v "$tool" >/dev/null || die "$tool is not installed (Debian: iproute2, util-linux, iptables)"
  done
  local network=${GPUNEX_TEST_DOCKERD_NETWORK:-isolated} iptables
  case $network in
    isolated | docker) iptables=true ;;
    open) iptables=false ;;
    *) die "GPUNEX_TEST_DOCKERD_NETWORK=$network: use isolated, docker or open" ;;
  esac
  mkdir -p "$DIR/data" "$DIR/exec"
  # The engine's own network namespace, with loopback up.
  local ns
  ns=gpx-$(basename "$DIR")
  ip netns add "$ns" || die "cannot create the network namespace $ns"
  echo "$ns" >"$DIR/netns"
  ip -n "$ns" link set lo up
  if [[ $network == isolated ]]; then
    in_netns iptables -I INPUT -i gpxwl+ -j REJECT || die "iptables failed in $ns"
  elif [[ $network == open ]]; then
    in_netns sysctl -qw net.ipv4.ip_forward=1
  fi
  # An empty config file: the host's /etc/docker/daemon.json must not apply.
  echo '{}' >"$DIR/daemon.json"
  local extra=()
  [[ -n ${DOCKERD_STORAGE_DRIVER:-} ]] && extra+=(--storage-driver "$DOCKERD_STORAGE_DRIVER")
  # nsenter and setsid exec dockerd: $! is its pid.
  in_netns setsid "$dockerd" \
    --config-file "$DIR/daemon.json" \
    --host "unix://$DIR/docker.sock" \
    --data-root "$DIR/data" \
    --exec-root "$DIR/exec" \
    --pidfile "$DIR/docker.pid" \
    --iptables="$iptables" --ip-masq=false --bridge=none \
    --log-level=warn "${extra[@]}" \
    </dev/null >"$DIR/dockerd.log" 2>&1 &
  local pid=$!
  echo "$pid" >"$DIR/launcher.pid"
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then
      echo "dockerd.sh: dockerd exited during startup; its log:" >&2
      tail -n 20 "$DIR/dockerd.log" >&2 || true
      exit 1
    fi
    if cli version >/dev/null 2>&1; then
      echo "$DIR/docker.sock"
      return 0
    fi
    sleep 0.2
  done
  echo "dockerd.sh: dockerd did not answer within 60 s; its log:" >&2
  tail -n 20 "$DIR/dockerd.log" >&2 || true
  kill -TERM "$pid" 2>/dev/null || true
  exit 1
}

stop() {
  [[ -d $DIR ]] || return 0
  local pid=""
  [[ -f $DIR/docker.pid ]] && pid=$(cat "$DIR/docker.pid")
  [[ -z $pid && -f $DIR/launcher.pid ]] && pid=$(cat "$DIR/launcher.pid")
  if [[ -S $DIR/docker.sock ]] && cli version >/dev/null 2>&1; then
    # Containers and networks first: a network's bridge would outlive the engine.
    local ids
    ids=$(cli ps -aq 2>/dev/null || true)
    [[ -n $ids ]] && cli rm -f $ids >/dev/null 2>&1 || true
    cli network prune -f >/dev/null 2>&1 || true
  fi
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  fi
  # The engine's own containerd and shims, if it died without stopping them: only the
  # processes whose command line names this directory.
  local p
  for p in $(pgrep -f -- "$DIR/exec" 2>/dev/null || true); do
    kill -KILL "$p" 2>/dev/null || true
  done
  # Leftover mounts under DIR, deepest first.
  local m
  for m in $(awk -v d="$DIR" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/mounts |
    sort -r); do
    umount -l "$m" 2>/dev/null || true
  done
  # The network namespace, with whatever bridges and rules the engine left in it.
  if [[ -f $DIR/netns ]]; then
    ip netns del "$(cat "$DIR/netns")" 2>/dev/null || true
  fi
  rm -rf "$DIR"
}

import_busybox() {
  local ref=$1
  shift
  local tree="" changes=(-c 'ENV PATH=/bin')
  while [[ $# -gt 0 ]]; do
    case $1 in
      --tree)
        [[ $# -ge 2 && -d $2 ]] || die "--tree needs a directory"
        tree=$2
        shift 2
        ;;
      --change)
        [[ $# -ge 2 ]] || die "--change needs an instruction"
        changes+=(-c "$2")
        shift 2
        ;;
      *) break ;;
    esac
  done
  local busybox=${BUSYBOX:-/bin/busybox}
  [[ -x $busybox ]] || die "$busybox not found (install busybox-static)"
  if ldd "$busybox" >/dev/null 2>&1; then
    die "$busybox is dynamically linked; a static busybox is needed (busybox-static)"
  fi
  local root
  root=$(mktemp -d "$DIR/rootfs.XXXXXX")
  mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/proc" "$root/sys" "$root/dev"
  # As in every distribution's image: a tmpfs the engine mounts there takes this mode.
  chmod 1777 "$root/tmp"
  cp "$busybox" "$root/bin/busybox"
  local applet
  for applet in $("$busybox" --list); do
    [[ $applet == busybox ]] || ln -sf busybox "$root/bin/$applet"
  done
  local file lib
  for file in "$@"; do
    [[ -x $file ]] || die "$file not found"
    mkdir -p "$root$(dirname "$file")"
    cp "$file" "$root$file"
    for lib in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*' || true); do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
  done
  echo 'root:x:0:0:root:/root:/bin/sh' >"$root/etc/passwd"
  echo 'root:x:0:' >"$root/etc/group"
  [[ -z $tree ]] || cp -a "$tree/." "$root/"
  tar -C "$root" -c . | cli import "${changes[@]}" - "$ref" >/dev/null
  rm -rf "$root"
}

[[ $# -ge 2 ]] || usage
cmd=$1
DIR=$(realpath -m "$2")
case $cmd in
  start) start ;;
  stop) stop ;;
  import-busybox)
    [[ $# -ge 3 ]] || usage
    shift 2
    import_busybox "$@"
    ;;
  *) usage ;;
esac
