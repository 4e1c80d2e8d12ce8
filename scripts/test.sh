#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks the formatting, builds
#   - build/release: GCC, RelWithDebInfo, warnings as errors: every test;
#   - build/asan:    clang, ASan+UBSan, -Wthread-safety, warnings as errors: the tests
#                    but the slowest end-to-end ones,
#                    and clang-tidy over every translation unit (scripts/clang-tidy.sh);
#   - build/tsan:    clang, ThreadSanitizer: the unit tests of the concurrent parts (HTTP
#                    server, email outbox, fleet sessions, agent link, store pools, rentals,
#                    payouts, top-ups);
# starts a throw-away PostgreSQL server on loopback, and runs them (unit, store
# conformance on both backends, end-to-end, the dashboard in a browser; the slowest
# end-to-end tests only in the release build).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
# The web dashboard first: gpunexd embeds web/dist, and the browser tests need it.
scripts/build-web.sh
tests/solana/setup.sh  # the Solana test node's npm packages (tests/e2e/solana_front.py)
scripts/check-format.sh

jobs=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Cache hits across clones in other folders (CI builds a fresh clone).
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1

configure() {  # dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DGPUNEX_WERROR=ON "$@" >/dev/null
}

configure build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build/release -j "$jobs"
CC=clang CXX=clang++ configure build/asan -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON -DGPUNEX_CUDA=OFF
cmake --build build/asan -j "$jobs"
scripts/clang-tidy.sh build/asan

# ThreadSanitizer: the unit tests of the parts that share state between threads (and the
# payouts and top-ups, whose checks race across threads and instances).
tsan_tests=(
  src/platform/http/http_test
  src/platform/notify/notify_test
  src/platform/fleet/fleet_test
  src/platform/rentals/rentals_test
  src/platform/payouts/payouts_test
  src/platform/topups/topups_test
  src/platform/store/store_test
  src/agent/link/agent_link_test
)
CC=clang CXX=clang++ configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNEX_TSAN=ON -DGPUNEX_CUDA=OFF
cmake --build build/tsan -j "$jobs" --target "${tsan_tests[@]##*/}"

pgdir=$(mktemp -d)
cleanup() { scripts/pg-test-server.sh stop "$pgdir/pg" >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
trap cleanup EXIT
GPUNEX_TEST_PG_URL=$(scripts/pg-test-server.sh start "$pgdir/pg")
export GPUNEX_TEST_PG_URL

logs=$pgdir/logs
mkdir -p "$logs"
phase() { echo "== $1 (at ${SECONDS} s)"; }

phase "release build tests"
ctest --test-dir build/release --output-on-failure -j "$jobs" --timeout 600 | tee "$logs/release"
phase "thread sanitizer tests"
for t in "${tsan_tests[@]}"; do
  echo "-- $t"
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "build/tsan/$t" --gtest_brief=1
done
phase "sanitizer build tests"
# Every unit test and most end-to-end tests again under ASan+UBSan. The slowest end-to-end
# tests, whose gpunexd paths the others cover too, run in the release build only: the
# dashboard in a browser (every browser suite), the agent in Docker (its install; its
# network isolation check, which agent_isolation_test runs under the sanitizers; its
# containers' logs, which workloads_test and fleet_test check), the agent channel, the
# reliability score's timed outages, the marketplace's fleet of real agents with its
# 1-second deadlines (test_authz reaches the marketplace routes under the sanitizers), the
# sign-up flood's latency comparison, and the rentals in Docker with their kills of
# gpunexd under 50 metered rentals (test_authz and test_bad_inputs_rentals reach the
# rental routes under the sanitizers), and the payouts of such rentals with their kills of
# gpunexd at every step of a run (test_bad_inputs_payouts, test_topups and test_authz
# reach the payout and top-up routes under the sanitizers; the bank files' independent
# checker is Python alone).
asan_skip='^(browser_.*|e2e_test_agent_docker|e2e_test_network_isolation|e2e_test_agent_logs|e2e_test_agent_channel|e2e_test_reliability|e2e_test_marketplace|e2e_test_signup_flood|e2e_test_rentals|e2e_test_rentals_crash|e2e_test_payouts|e2e_test_payouts_crash|e2e_test_bankcheck|solana_test_node)$'
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build/asan --output-on-failure -j "$jobs" --timeout 900 -E "$asan_skip" | tee "$logs/asan"

# The ten slowest tests of the run, from ctest's own lines ("Test #12: name ... 1.23 sec").
phase "done"
echo "== the ten slowest tests"
for config in release asan; do
  sed -nE "s/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 $config \1/p" "$logs/$config"
done | sort -rn | head -10 | awk '{ printf "%9.1f s  %-8s %s\n", $1, $2, $3 }'
# One closing line for both configurations: ctest's own summaries, added up.
for config in release asan; do
  sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+)$/\1 \2/p' "$logs/$config"
done | awk '{ failed += $1; total += $2 } END { printf "tests: %d passed, %d failed\n", total - failed, failed }'
