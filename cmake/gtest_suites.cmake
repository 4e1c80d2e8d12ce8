# Run after a unit-test binary is linked (CMakeLists.txt: gpunex_test): lists its tests
# (--gtest_list_tests) and writes OUTPUT, a CTest script that registers one test per
# suite, NAME.SUITE running `BINARY --gtest_filter=SUITE.*`, and one per suite and
# parameter for a value-parameterized suite whose tests end in a parameter's name
# (NAME.Backends/StoreTest/sqlite: `--gtest_filter=Backends/StoreTest.*/sqlite`), so that
# its backends run side by side. A suite's tests share one process and its costs (the
# start of the binary, a fixture made once per suite); ctest runs the suites in parallel.
#
#   cmake -D BINARY=... -D NAME=... -D OUTPUT=... -P gtest_suites.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var BINARY NAME OUTPUT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "gtest_suites.cmake: ${var} is not set")
  endif()
endforeach()

# The store's tests list their PostgreSQL instances only where GPUNEX_TEST_PG_URL is set
# (store/testing/test_database.h), and builds run before scripts/test.sh starts its
# server: list them all, so each backend is registered; without a server at run time the
# PostgreSQL ones skip.
if("$ENV{GPUNEX_TEST_PG_URL}" STREQUAL "")
  set(ENV{GPUNEX_TEST_PG_URL} "postgresql://listing-only.invalid/")
endif()
execute_process(COMMAND "${BINARY}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${BINARY} --gtest_list_tests failed (${rc}):\n${listing}")
endif()

# Group the tests: groups holds "SUITE" or "SUITE|PARAM", counts the tests of each.
set(groups "")
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.(  #.*)?$")
    set(suite "${CMAKE_MATCH_1}")
  elseif(suite AND line MATCHES "^  ([^ ]+)")
    set(test "${CMAKE_MATCH_1}")
    if(test MATCHES "^DISABLED_" OR suite MATCHES "^DISABLED_|/DISABLED_")
      continue()
    endif()
    set(group "${suite}")
    if(line MATCHES "# GetParam\\(\\)" AND test MATCHES "/([A-Za-z0-9_]+)$")
      set(group "${suite}|${CMAKE_MATCH_1}")
    endif()
    string(MAKE_C_IDENTIFIER "${group}" key)
    if(NOT DEFINED count_${key})
      list(APPEND groups "${group}")
      set(count_${key} 0)
    endif()
    math(EXPR count_${key} "${count_${key}} + 1")
  endif()
endforeach()

set(script "")
foreach(group IN LISTS groups)
  string(MAKE_C_IDENTIFIER "${group}" key)
  if(group MATCHES "^(.*)\\|(.*)$")
    set(test_name "${NAME}.${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    set(filter "${CMAKE_MATCH_1}.*/${CMAKE_MATCH_2}")
  else()
    set(test_name "${NAME}.${group}")
    set(filter "${group}.*")
  endif()
  # COST: ctest starts the suites with more tests first (fresh builds have no timings).
  string(APPEND script
         "add_test([=[${test_name}]=] [=[${BINARY}]=] [=[--gtest_filter=${filter}]=])\n"
         "set_tests_properties([=[${test_name}]=] PROPERTIES LABELS unit TIMEOUT 900 "
         "COST ${count_${key}})\n")
endforeach()
file(WRITE "${OUTPUT}" "${script}")
