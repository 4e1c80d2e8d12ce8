// Fault injection and inspection for the storage benchmark's tests: the fallbacks of
// storage.h taken on demand, so they are tested on any machine, and a look at the file.
#pragma once

#include <cstdint>
#include <functional>

#include "agent/bench/storage.h"

namespace gpunex::agent::bench::internal {

struct StorageHooks {
  bool refuse_direct_io = false;  // as if the file system refused O_DIRECT
  bool refuse_io_uring = false;   // as if io_uring_setup were refused
  // Called after the sequential write with the test file's descriptor and length, so a
  // test can look at what was written.
  std::function<void(int fd, int64_t bytes)> after_write;
};

// RunStorageBenchmark with `hooks` applied.
StatusOr<StorageResult> RunStorageBenchmarkWithHooks(const StorageOptions& o,
                                                     const StorageHooks& hooks);

}  // namespace gpunex::agent::bench::internal
