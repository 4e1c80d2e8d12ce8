#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds the normal and the sanitizer
# (ASan+UBSan) configurations with warnings as errors, starts a throw-away PostgreSQL
# server on loopback, and runs every test (unit, store conformance on both backends,
# end-to-end, the dashboard in a browser) in both configurations.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# The web dashboard first: gpunexd embeds web/dist, and the browser tests need it.
scripts/build-web.sh

jobs=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Cache hits across clones in other folders (CI builds a fresh clone).
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1

build() {  # dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DGPUNEX_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}

build build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo
build build/asan -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON

pgdir=$(mktemp -d)
cleanup() { scripts/pg-test-server.sh stop "$pgdir/pg" >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
trap cleanup EXIT
GPUNEX_TEST_PG_URL=$(scripts/pg-test-server.sh start "$pgdir/pg")
export GPUNEX_TEST_PG_URL

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

echo "== release build tests"
ctest --test-dir build/release --output-on-failure -j "$jobs" --timeout 600
echo "== sanitizer build tests"
ctest --test-dir build/asan --output-on-failure -j "$jobs" --timeout 900
