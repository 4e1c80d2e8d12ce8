#!/usr/bin/env bash
# Installs the Debian 12 packages gpunex needs to build, test and run, when missing.
# Idempotent: installs nothing when everything is present.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache pkg-config git
  # libraries
  libboost1.81-dev libboost-json1.81-dev libssl-dev libsqlite3-dev libpqxx-dev
  libsodium-dev libcurl4-openssl-dev libspdlog-dev libfmt-dev libcli11-dev
  libtomlplusplus-dev libhowardhinnant-date-dev tzdata
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev postgresql python3 python3-aiosmtpd sqlite3
  wrk procps
  # agent: Docker Engine for workloads, a local registry and busybox for test images
  docker.io docker-registry busybox-static iproute2
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
