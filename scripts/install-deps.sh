#!/usr/bin/env bash
# Installs the Debian 12 packages gpunex needs to build, test and run, when missing.
# Idempotent: installs nothing when everything is present.
set -euo pipefail

packages=(
  # toolchain; clang for the thread-safety analysis and the sanitizer builds, its
  # sanitizer runtimes, clang-tidy and clang-format for the checks
  g++ cmake ninja-build ccache pkg-config git clang libclang-rt-14-dev clang-tidy clang-format
  # the linker (CMakeLists.txt: links several times faster than the default one)
  mold
  # libraries
  libboost1.81-dev libboost-json1.81-dev libssl-dev libsqlite3-dev libpqxx-dev
  libsodium-dev libcurl4-openssl-dev libspdlog-dev libfmt-dev libcli11-dev
  libtomlplusplus-dev libhowardhinnant-date-dev tzdata
  # the SSH gateway: libssh's server API
  libssh-dev
  # payouts: ISO 20022 files built and validated with libxml2, QR codes of top-ups
  libxml2-dev libqrencode-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev postgresql python3 python3-aiosmtpd python3-psycopg2
  # the API's description: converted to JSON for gpunexd at build time (python3-yaml), the
  # end-to-end tests' answers validated against it (python3-jsonschema)
  python3-yaml python3-jsonschema
  sqlite3
  # payouts' independent checkers: IBANs and ABA routing numbers, the pain.001 schema
  python3-stdnum libxml2-utils
  # the SSH gateway's tests: the OpenSSH client (ssh, sftp, scp, ssh-keygen), and the
  # sftp-server a test image carries
  openssh-client openssh-sftp-server
  wrk procps
  # storage and network benchmarks (bench/storage_vs_fio.sh, bench/network_vs_iperf3.sh)
  liburing-dev fio iperf3
  # agent: Docker Engine for workloads, a local registry and busybox for test images; each
  # test engine runs in a network namespace of its own with its own rules (iproute2, iptables)
  docker.io docker-registry busybox-static iproute2 iptables
  # web dashboard: browser tests in Debian's Chromium (tests/browser), fonts for screenshots
  chromium fonts-dejavu-core
)
# Node.js and npm build the web dashboard (scripts/build-web.sh). A node that is already
# installed is kept, whatever installed it; Debian's come only when the commands are missing.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"
}

missing=()
for p in "${packages[@]}"; do
  installed "$p" || missing+=("$p")
done
# The test of `ssh -J` to an image's own SSH server (tests/e2e/test_access.py) copies the
# host's sshd into its image; the host needs the program, not a server. So openssh-server
# comes on its own, with no SSH server started on this machine, now or at the next boot:
# /etc/ssh/sshd_not_to_be_run (Debian's ssh.service, ssh.socket and init script start
# nothing while it exists; remove it to run a server here) is made before the package,
# and a policy-rc.d that exits 101 keeps the install from starting any service (one
# already there is kept as it is). HAProxy, which the cluster test (tests/e2e/test_cluster.py)
# starts on loopback in front of its instances, comes the same way: its program, no service.
ssh_server=false
installed openssh-server || ssh_server=true
servers=()
installed haproxy || servers+=(haproxy)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
apt_install() {
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

if ((${#missing[@]})) || $ssh_server || ((${#servers[@]})); then
  $SUDO apt-get update -qq
fi
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  apt_install "${missing[@]}"
fi
if $ssh_server; then
  servers+=(openssh-server)
  $SUDO mkdir -p /etc/ssh
  $SUDO touch /etc/ssh/sshd_not_to_be_run
fi
if ((${#servers[@]})); then
  echo "installing: ${servers[*]} (for their programs; no service is started)"
  policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    policy=/usr/sbin/policy-rc.d
    trap '$SUDO rm -f "$policy"' EXIT
    printf '#!/bin/sh\n# scripts/install-deps.sh: no service starts while it installs %s\nexit 101\n' "${servers[*]}" |
      $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
  fi
  apt_install "${servers[@]}"
  if [ -n "$policy" ]; then
    $SUDO rm -f "$policy"
    trap - EXIT
  fi
fi
