#!/usr/bin/env bash
# The whole test suite: installs what is missing, checks the formatting, lints the API's
# description (docs/openapi.yaml), builds
#   - build/release: GCC, RelWithDebInfo, warnings as errors: every end-to-end and
#                    browser test, the benchmarks' smoke runs, and the unit tests of what
#                    a release build does differently (NDEBUG: common/invariant.h);
#   - build/asan:    clang, ASan+UBSan, -Wthread-safety, warnings as errors: every unit
#                    test and the end-to-end tests but the slowest,
#                    and clang-tidy over every translation unit (scripts/clang-tidy.sh);
#   - build/tsan:    clang, ThreadSanitizer: the unit tests of the concurrent parts (HTTP
#                    server, email outbox, fleet sessions, agent link, store pools, rentals,
#                    payouts, top-ups);
# starts a throw-away PostgreSQL server on loopback, and runs them (unit, store
# conformance on both backends, end-to-end, the dashboard in a browser; the slowest
# end-to-end tests only in the release build).
set -euo pipefail
cd "$(dirname "$0")/.."

phase() { echo "== $1 (at ${SECONDS} s)"; }

phase "dependencies, the dashboard, formatting and the API's description"
scripts/install-deps.sh
# The web dashboard first: gpunexd embeds web/dist, and the browser tests need it.
scripts/build-web.sh
tests/solana/setup.sh  # the Solana test node's npm packages (tests/e2e/solana_front.py)
scripts/check-format.sh
scripts/lint-openapi.sh  # docs/openapi.yaml with @redocly/cli (tests/openapi)

jobs=${JOBS:-$(nproc)}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/ccache}
# Cache hits across clones in other folders (CI builds a fresh clone).
export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1

configure() {  # dir, extra cmake args...
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DGPUNEX_WERROR=ON "$@" >/dev/null
}

phase "release build"
# Of the unit-test binaries the release build links only the one it runs (InvariantTest's);
# the others' sources are compiled, for GCC's warnings (CMakeLists.txt: GPUNEX_UNIT_TESTS).
configure build/release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNEX_UNIT_TESTS=common_test
cmake --build build/release -j "$jobs"
phase "sanitizer build"
CC=clang CXX=clang++ configure build/asan -DCMAKE_BUILD_TYPE=Debug -DGPUNEX_SANITIZE=ON -DGPUNEX_CUDA=OFF
cmake --build build/asan -j "$jobs"
phase "clang-tidy"
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
  src/common/net_test
)
phase "thread sanitizer build"
CC=clang CXX=clang++ configure build/tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGPUNEX_TSAN=ON -DGPUNEX_CUDA=OFF
cmake --build build/tsan -j "$jobs" --target "${tsan_tests[@]##*/}"

pgdir=$(mktemp -d)
cleanup() { scripts/pg-test-server.sh stop "$pgdir/pg" >/dev/null 2>&1 || true; rm -rf "$pgdir"; }
trap cleanup EXIT
GPUNEX_TEST_PG_URL=$(scripts/pg-test-server.sh start "$pgdir/pg")
export GPUNEX_TEST_PG_URL

logs=$pgdir/logs
mkdir -p "$logs"

# Two kinds of tests, run in two ways. The unit tests and the benchmarks' smoke runs keep
# the cores busy: `ctest -j <cores>`, one configuration after the other. The end-to-end and
# browser tests mostly wait (on heartbeats, meter ticks, containers, a browser): they run in
# more slots than cores (E2E_SLOTS), the release build's and the sanitizer build's side by
# side; a test that checks latencies or runs many containers takes several slots
# (tests/CMakeLists.txt). The sign-up flood's latency comparison runs alone on the machine,
# after the unit tests.
slots=${E2E_SLOTS:-$((2 * jobs))}
asan_slots=${ASAN_E2E_SLOTS:-1}
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()

# Every unit test runs in the sanitizer build; the release build runs those whose code
# differs there (NDEBUG) and the benchmarks' smoke runs.
phase "release build: benchmarks' smoke runs and the NDEBUG unit tests"
ctest --test-dir build/release --output-on-failure -j "$jobs" --timeout 600 \
  -R '^common_test\.InvariantTest$|^bench_' 2>&1 | tee "$logs/release-unit" || failed+=("release unit tests")
ctest --test-dir build/release --output-on-failure -R '^e2e_test_signup_flood$' 2>&1 |
  tee "$logs/release-flood" || failed+=("the sign-up flood")
phase "thread sanitizer tests"
# One binary per core at a time; each one's output is shown when it ends.
tsan_one() {  # test binary path under build/tsan
  local log
  log=$logs/tsan-$(basename "$1")
  if TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 "build/tsan/$1" --gtest_brief=1 \
    >"$log" 2>&1; then
    echo "-- $1: passed"
  else
    echo "-- $1: FAILED"
    cat "$log"
    return 1
  fi
}
export -f tsan_one
export logs
printf '%s\n' "${tsan_tests[@]}" | xargs -P "$jobs" -I{} bash -c 'tsan_one {}' ||
  failed+=("ThreadSanitizer tests")
phase "sanitizer build: unit tests"
ctest --test-dir build/asan --output-on-failure -j "$jobs" --timeout 900 -L '^unit$' 2>&1 |
  tee "$logs/asan-unit" || failed+=("sanitizer unit tests")

# Under ASan+UBSan the end-to-end tests that reach the most of gpunexd's request handling
# run again: every bad input (the parsers and validators of every domain), every route
# with every kind of caller (test_authz), HTTP framing, the full provider path, crashes,
# idempotency, the rental and job rules, top-ups; of a module split by backend
# (tests/CMakeLists.txt) its SQLite share only (the PostgreSQL store runs under the
# sanitizers in store_test's conformance suite, and every end-to-end test on PostgreSQL in
# the release build). The others run in the release build only: their domains' unit tests
# run under the sanitizers, and test_authz and the bad-input tests reach their routes
# there (the dashboard in a browser, the agent in Docker and its network isolation check,
# which agent_isolation_test runs under the sanitizers, the agent channel, benchmarks,
# drafts, reviews, the reliability score's timed outages, the marketplace's fleet of real
# agents, the sign-up flood's latency comparison, the rentals in Docker with their kills of
# gpunexd, and the payouts with theirs; the bank files' independent checker is Python).
asan_e2e_tests='^(e2e_test_bad_inputs|e2e_test_bad_inputs_schedules|e2e_test_bad_inputs_rentals_sqlite|e2e_test_bad_inputs_payouts_sqlite|e2e_test_authz_sqlite|e2e_test_http_framing|e2e_test_full_path_sqlite|e2e_test_crash_sqlite|e2e_test_idempotency|e2e_test_rentals_rules|e2e_test_topups_sqlite|e2e_test_login_lockout|e2e_test_credentials)$'
phase "end-to-end and browser tests: release build (${slots} slots) and sanitizer build (${asan_slots}) side by side"
# The release build's progress is shown as it goes; the sanitizer build's is in its log,
# shown at the end where something failed.
(ctest --test-dir build/release --output-on-failure -j "$slots" --timeout 600 \
  -LE '^(unit|bench)$' -E '^e2e_test_signup_flood$' 2>&1 | tee "$logs/release-e2e") &
release_e2e=$!
ctest --test-dir build/asan --output-on-failure -j "$asan_slots" --timeout 900 -R "$asan_e2e_tests" \
  >"$logs/asan-e2e" 2>&1 &
asan_e2e=$!
wait "$release_e2e" || failed+=("release end-to-end tests")
phase "release build's end-to-end tests done"
wait "$asan_e2e" || failed+=("sanitizer end-to-end tests")
tail -n 12 "$logs/asan-e2e"
for log in release-unit release-flood asan-unit release-e2e asan-e2e; do
  if grep -Eq " [1-9][0-9]* tests failed out of" "$logs/$log"; then
    echo "== $log: what failed"
    sed -n '/The following tests FAILED/,$p' "$logs/$log"
    # The output of each failed test, as ctest printed it.
    awk '/\*\*\*(Failed|Timeout|Exception)/ { show = 1 } /^ *Start +[0-9]+:/ { show = 0 } show' \
      "$logs/$log"
  fi
done

# The ten slowest tests of the run, from ctest's own lines ("Test #12: name ... 1.23 sec").
phase "done"
echo "== the ten slowest tests"
for log in release-unit release-flood release-e2e asan-unit asan-e2e; do
  sed -nE "s/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 ${log%%-*} \1/p" "$logs/$log"
done | sort -rn | awk 'NR <= 10 { printf "%9.1f s  %-8s %s\n", $1, $2, $3 }'
# One closing line for both configurations: ctest's own summaries, added up.
for log in release-unit release-flood release-e2e asan-unit asan-e2e; do
  sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+)$/\1 \2/p' "$logs/$log"
done | awk '{ failed += $1; total += $2 } END { printf "tests: %d passed, %d failed\n", total - failed, failed }'
if ((${#failed[@]})); then
  printf 'FAILED: %s\n' "${failed[@]}"
  exit 1
fi
