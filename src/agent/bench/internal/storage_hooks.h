// Fault injection for the storage benchmark's tests: the fallbacks of storage.h
// taken on demand, so they are tested on any machine.
#pragma once

#include "agent/bench/storage.h"

namespace gpunex::agent::bench::internal {

struct StorageHooks {
  bool refuse_direct_io = false;  // as if the file system refused O_DIRECT
  bool refuse_io_uring = false;   // as if io_uring_setup were refused
};

// RunStorageBenchmark with `hooks` applied.
StatusOr<StorageResult> RunStorageBenchmarkWithHooks(const StorageOptions& o,
                                                     const StorageHooks& hooks);

}  // namespace gpunex::agent::bench::internal
