#!/usr/bin/env bash
# A throw-away PostgreSQL 15 server for tests (the store conformance suite, end-to-end
# tests). Not for production: authentication is "trust" for loopback connections.
#
#   scripts/pg-test-server.sh start DIR   initialises and starts a server in DIR (created
#                                         if missing; must be empty or not exist) on
#                                         127.0.0.1 and a free port, waits until it
#                                         accepts connections and prints its URL,
#                                         postgresql://postgres@127.0.0.1:PORT/postgres,
#                                         as the only line on stdout.
#   scripts/pg-test-server.sh stop DIR    stops that server and removes DIR.
#
# Run as root, the server runs as the `postgres` system user (PostgreSQL refuses to run
# as root) and DIR is chowned to it. When `postgres` cannot reach DIR (a parent such as a
# `mktemp -d` directory or /root is closed to it), the cluster lives in a private
# directory under /tmp instead and DIR/server points to it; stop removes both.
# The cluster's home holds data/, the unix socket, initdb.log and the server log (log).
#
# Environment: PG_BINDIR (default /usr/lib/postgresql/15/bin).
set -euo pipefail

readonly PG_BINDIR="${PG_BINDIR:-/usr/lib/postgresql/15/bin}"
readonly MARKER=".gpunex-pg-test-server"

die() {
  echo "pg-test-server: $*" >&2
  exit 1
}

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}

is_root() { [[ "$(id -u)" == 0 ]]; }

# Runs a command as the server's owner: `postgres` when we are root, ourselves otherwise.
as_owner() {
  if is_root; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# Prints a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 - <<'EOF' && return 0
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
EOF
  fi
  local port
  for _ in $(seq 1 50); do
    port=$((20000 + RANDOM % 40000))
    # A refused connection means the port is free.
    if ! (exec 3<>"/dev/tcp/127.0.0.1/${port}") 2>/dev/null; then
      echo "${port}"
      return 0
    fi
  done
  return 1
}

# Prints the directory holding the cluster started in DIR.
home_of() {
  if [[ -L "$1/server" ]]; then readlink -- "$1/server"; else echo "$1"; fi
}

start() {
  local dir="$1"
  [[ -x "${PG_BINDIR}/initdb" ]] ||
    die "${PG_BINDIR}/initdb not found (install the postgresql package or set PG_BINDIR)"
  dir="$(realpath -m -- "${dir}")"
  if [[ -e "${dir}" ]]; then
    [[ -d "${dir}" && -z "$(ls -A "${dir}")" ]] || die "${dir} exists and is not an empty directory"
  fi
  if is_root; then
    getent passwd postgres >/dev/null || die "no 'postgres' system user to run the server as"
  fi
  mkdir -p "${dir}"
  chmod 700 "${dir}"
  touch "${dir}/${MARKER}"

  # The cluster's home: DIR itself when the server's user can reach it and the socket
  # path (HOME/.s.PGSQL.PORT) fits in sockaddr_un (107 bytes); a private directory
  # under /tmp otherwise.
  local home="${dir}"
  if is_root; then
    chown postgres: "${dir}" "${dir}/${MARKER}"
  fi
  if ((${#dir} > 80)) || ! as_owner test -x "${dir}"; then
    home="$(mktemp -d /tmp/gpunex-pg.XXXXXX)"
    if is_root; then chown postgres: "${home}"; fi
    ln -s "${home}" "${dir}/server"
  fi

  as_owner "${PG_BINDIR}/initdb" -D "${home}/data" -U postgres --auth=trust \
    --no-locale --encoding=UTF8 >"${home}/initdb.log" 2>&1 ||
    die "initdb failed; see ${home}/initdb.log"
  # Trust loopback and the private socket only; the server listens on nothing else.
  as_owner tee "${home}/data/pg_hba.conf" >/dev/null <<'EOF'
# TYPE  DATABASE  USER  ADDRESS        METHOD
local   all       all                  trust
host    all       all   127.0.0.1/32   trust
EOF
  as_owner tee -a "${home}/data/postgresql.conf" >/dev/null <<EOF

# pg-test-server.sh
listen_addresses = '127.0.0.1'
unix_socket_directories = '${home}'
# Throw-away data: the tests kill gpunexd, never this server, and what a server has
# committed survives its clients' deaths without a flush to disk. Not flushing saves
# seconds per test database (its migrations' commits) on a slow disk.
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
shared_buffers = 32MB
log_min_messages = warning
EOF

  local port attempt
  for attempt in 1 2 3 4 5; do
    port="$(free_port)" || die "found no free port"
    if as_owner "${PG_BINDIR}/pg_ctl" -D "${home}/data" -l "${home}/log" -o "-p ${port}" \
      -w -t 60 start >/dev/null 2>&1; then
      break
    fi
    # Most likely another process took the port between the check and the start.
    port=""
    echo "pg-test-server: start attempt ${attempt} failed; retrying" >&2
  done
  [[ -n "${port}" ]] || die "the server did not start; see ${home}/log"

  for _ in $(seq 1 100); do
    if "${PG_BINDIR}/pg_isready" -q -h 127.0.0.1 -p "${port}" -U postgres -d postgres; then
      echo "postgresql://postgres@127.0.0.1:${port}/postgres"
      return 0
    fi
    sleep 0.1
  done
  die "the server is not ready after 10 s; see ${home}/log"
}

stop() {
  local dir="$1"
  [[ -d "${dir}" ]] || return 0
  [[ -e "${dir}/${MARKER}" ]] ||
    die "${dir} was not made by pg-test-server.sh start; not touching it"
  local home
  home="$(home_of "${dir}")"
  if [[ -f "${home}/data/postmaster.pid" ]]; then
    as_owner "${PG_BINDIR}/pg_ctl" -D "${home}/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
      echo "pg-test-server: pg_ctl stop failed; removing ${dir} anyway" >&2
  fi
  if [[ "${home}" != "${dir}" ]]; then rm -rf -- "${home}"; fi
  rm -rf -- "${dir}"
}

[[ $# == 2 ]] || usage
case "$1" in
  start) start "$2" ;;
  stop) stop "$2" ;;
  *) usage ;;
esac
