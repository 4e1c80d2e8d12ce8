// The storage benchmark of the provider agent (SPEC BEN-5): how fast the disk holding the
// agent's work area moves data, measured on a test file created there.
//
// Three phases, each bounded by StorageOptions::seconds_per_phase:
//   1. sequential write: 1 MiB blocks written one after another with O_DIRECT (no page
//      cache) until the file is complete, then fsync; the fsync is inside the timing.
//      Random bytes, each 4 KiB sector stamped with its offset: nothing to compress or
//      deduplicate.
//      A phase that runs out of time ends the file where the writing stopped, and the
//      other phases use that shorter file (StorageResult::file_bytes).
//   2. sequential read: the file read back in 1 MiB blocks, O_DIRECT, until its end.
//   3. random read: 4 KiB reads at uniformly random 4 KiB-aligned offsets, O_DIRECT,
//      with queue_depth of them in flight at all times (io_uring), for the whole phase;
//      each read's latency (from its submission to the sight of its completion) goes to
//      the p50 and p99.
// Units: MB/s are 1e6 bytes per second; latencies microseconds. The test file is
// unlinked as soon as it is opened (the space is returned even if the process dies) and
// is never left behind.
//
// Fallbacks, reported in the result rather than hidden: a file system that refuses
// O_DIRECT (tmpfs before Linux 6.6, some FUSE file systems) is measured with buffered I/O,
// the file's cached pages dropped (POSIX_FADV_DONTNEED) before each read phase and
// read-ahead turned off for the random phase (direct_io = false); where io_uring is
// refused (Docker's default seccomp profile blocks it since Docker 25, old kernels),
// queue_depth threads issue synchronous reads instead (io_uring = false).
//
// Thread-safety: RunStorageBenchmark may be called from any thread; concurrent calls on
// the same disk measure each other.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace gpunex::agent::bench {

struct StorageOptions {
  std::string dir;  // the agent's work area; the test file is created here and removed after
  int64_t file_bytes = 1LL << 30;  // test file size, rounded down to whole MiB; >= 1 MiB
  double seconds_per_phase = 8;    // each of: seq write, seq read, random read; (0, 120]
  int queue_depth = 32;            // random 4 KiB reads in flight; 1..256
  // Refuse (kFailedPrecondition) if the file would leave less than this free.
  int64_t keep_free_bytes = 2LL << 30;
};

struct StorageResult {
  double seq_write_mb_s = 0, seq_read_mb_s = 0;  // O_DIRECT, 1 MiB blocks
  double rand_read_iops = 0;                     // O_DIRECT, 4 KiB, queue_depth in flight
  double rand_read_p50_us = 0, rand_read_p99_us = 0;
  int64_t file_bytes = 0;  // the file the read phases used
  // false when the file system refused O_DIRECT and buffered I/O with cache dropping was
  // used: the figures then say more about memory than about the disk.
  bool direct_io = true;
  // false when io_uring was refused and queue_depth threads issued the random reads.
  bool io_uring = true;
};

// Runs the three phases in `o.dir`.
// Fails with kInvalidArgument for out-of-range options; kNotFound when `o.dir` does not
// exist; kFailedPrecondition when the file would leave less than keep_free_bytes free
// (nothing is written then); kUnavailable when the file cannot be created or an I/O
// fails (the message says which phase and why). The file is gone whenever this returns.
StatusOr<StorageResult> RunStorageBenchmark(const StorageOptions& o);

}  // namespace gpunex::agent::bench
