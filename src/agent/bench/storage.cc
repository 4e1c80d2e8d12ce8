#include "agent/bench/storage.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "agent/bench/internal/latency_histogram.h"
#include "agent/bench/internal/storage_hooks.h"
#include "common/log.h"

namespace gpunex::agent::bench {
namespace {

using internal::LatencyHistogram;

constexpr int64_t kSeqBlock = 1 << 20;
constexpr int64_t kRandBlock = 4096;
constexpr size_t kAlign = 4096;  // O_DIRECT buffers and offsets
constexpr double kMaxSecondsPerPhase = 120;
constexpr int kMaxQueueDepth = 256;
constexpr int64_t kMaxFileBytes = 1LL << 40;

int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string Errno(int e) { return std::strerror(e); }

// xorshift64*: cheap enough to draw an offset per I/O at millions a second.
class Rng {
 public:
  explicit Rng(uint64_t seed) : x_(seed | 1) {}
  uint64_t Next() {
    x_ ^= x_ >> 12;
    x_ ^= x_ << 25;
    x_ ^= x_ >> 27;
    return x_ * 0x2545F4914F6CDD1DULL;
  }

 private:
  uint64_t x_;
};

uint64_t RandomSeed() {
  return (static_cast<uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
}

// A buffer aligned for O_DIRECT.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t size, size_t align = kAlign) {
    if (posix_memalign(&p_, align, size) != 0) p_ = nullptr;
  }
  ~AlignedBuffer() { std::free(p_); }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  char* get() const { return static_cast<char*>(p_); }

 private:
  void* p_ = nullptr;
};

// The test file: created, unlinked at once (so that nothing is left behind whatever
// happens next), closed on destruction.
class TestFile {
 public:
  ~TestFile() {
    if (fd_ >= 0) close(fd_);
  }

  Status Open(const std::string& dir, bool try_direct) {
    char name[64];
    std::snprintf(name, sizeof name, "/.gpunex-storage-bench-%d-%016llx",
                  static_cast<int>(getpid()), static_cast<unsigned long long>(RandomSeed()));
    const std::string path = dir + name;
    const int flags = O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC;
    if (try_direct) {
      fd_ = open(path.c_str(), flags | O_DIRECT, 0600);
      if (fd_ < 0 && errno != EINVAL) {
        return Unavailable("cannot create the test file " + path + ": " + Errno(errno));
      }
    }
    direct_ = fd_ >= 0;
    if (fd_ < 0) fd_ = open(path.c_str(), flags, 0600);
    if (fd_ < 0) return Unavailable("cannot create the test file " + path + ": " + Errno(errno));
    if (unlink(path.c_str()) != 0) {
      return Unavailable("cannot unlink the test file " + path + ": " + Errno(errno));
    }
    return Status::Ok();
  }

  // Goes on with buffered I/O after the file system accepted O_DIRECT at open but refused
  // it for I/O.
  Status DropDirect() {
    const int fl = fcntl(fd_, F_GETFL);
    if (fl < 0 || fcntl(fd_, F_SETFL, fl & ~O_DIRECT) != 0) {
      return Unavailable("cannot turn O_DIRECT off: " + Errno(errno));
    }
    direct_ = false;
    return Status::Ok();
  }

  // Buffered I/O only: drops the file's cached pages, so that reads go to the disk.
  void DropCache() const {
    if (!direct_) posix_fadvise(fd_, 0, 0, POSIX_FADV_DONTNEED);
  }

  int fd() const { return fd_; }
  bool direct() const { return direct_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
};

// The buffer of the sequential phases: 2 MiB-aligned and, where the kernel grants
// transparent huge pages on request (the usual "madvise" setting), backed by one, so that
// a 1 MiB block is physically contiguous and reaches the device as one request. Over
// scattered 4 KiB pages a 1 MiB request needs 256 segments, more than many devices take
// at once (virtio-blk: 254), and the kernel splits it by an amount that depends on where
// the pages happen to lie: the same virtual disk then read at 1.2 to 2.5 GB/s from one run
// to the next, and at 3.3 GB/s steadily from a huge page. Touched here, so the page is in
// place before the timing starts.
std::unique_ptr<AlignedBuffer> SequentialBuffer() {
  constexpr size_t kHugePage = 2 << 20;
  auto buf = std::make_unique<AlignedBuffer>(kHugePage, kHugePage);
  if (buf->get() == nullptr) return nullptr;
  madvise(buf->get(), kHugePage, MADV_HUGEPAGE);  // advice: fine if refused
  std::memset(buf->get(), 0, kHugePage);
  return buf;
}

Status Validate(const StorageOptions& o) {
  FieldErrors errors;
  if (o.dir.empty()) errors["dir"] = "must name the directory to measure";
  if (o.file_bytes < kSeqBlock || o.file_bytes > kMaxFileBytes) {
    errors["file_bytes"] = "must be from 1 MiB to 1 TiB";
  }
  if (!(o.seconds_per_phase > 0 && o.seconds_per_phase <= kMaxSecondsPerPhase)) {
    errors["seconds_per_phase"] = "must be more than 0 and at most 120";
  }
  if (o.queue_depth < 1 || o.queue_depth > kMaxQueueDepth) {
    errors["queue_depth"] = "must be from 1 to 256";
  }
  if (o.keep_free_bytes < 0) errors["keep_free_bytes"] = "must not be negative";
  if (!errors.empty())
    return Status(StatusCode::kInvalidArgument, "bad storage benchmark options", errors);
  return Status::Ok();
}

Status CheckSpace(const std::string& dir, int64_t file_bytes, int64_t keep_free_bytes) {
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return NotFound("no such directory: " + dir);
    return Unavailable("cannot examine " + dir + ": " + Errno(errno));
  }
  if (!S_ISDIR(st.st_mode)) return NotFound("not a directory: " + dir);
  struct statvfs vfs;
  if (statvfs(dir.c_str(), &vfs) != 0)
    return Unavailable("cannot examine " + dir + ": " + Errno(errno));
  const int64_t free_bytes =
      static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
  if (free_bytes - file_bytes < keep_free_bytes) {
    return FailedPrecondition(
        "a " + std::to_string(file_bytes >> 20) + " MiB test file in " + dir + " would leave " +
        std::to_string(std::max<int64_t>(0, free_bytes - file_bytes) >> 20) +
        " MiB free, less than the " + std::to_string(keep_free_bytes >> 20) + " MiB to keep");
  }
  return Status::Ok();
}

// Writes the whole of `n` bytes at `offset`, retrying short writes.
Status WriteFully(int fd, const char* p, int64_t n, int64_t offset, int* err) {
  while (n > 0) {
    const ssize_t w = pwrite(fd, p, static_cast<size_t>(n), offset);
    if (w < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return Unavailable("sequential write failed: " + Errno(errno));
    }
    p += w;
    n -= w;
    offset += w;
  }
  return Status::Ok();
}

// Phase 1. Returns the bytes written (a whole number of blocks) and sets the rate.
StatusOr<int64_t> SequentialWrite(TestFile& file, int64_t file_bytes, double seconds,
                                  double* mb_s) {
  std::unique_ptr<AlignedBuffer> block = SequentialBuffer();
  if (block == nullptr) return Internal("out of memory for the I/O buffer");
  AlignedBuffer& buf = *block;
  Rng rng(RandomSeed());
  // Incompressible content, so that storage that compresses is not flattered...
  for (int64_t i = 0; i < kSeqBlock; i += 8) {
    const uint64_t v = rng.Next();
    std::memcpy(buf.get() + i, &v, 8);
  }
  // ... and no two 4 KiB sectors of the file alike, so that storage that deduplicates is
  // not either: each sector of a block starts with its own file offset mixed with a
  // random key of this run (16 bytes per 4 KiB, rewritten before each write, as fio's
  // scramble_buffers does by default).
  const uint64_t key = rng.Next();
  auto stamp = [&](int64_t offset) {
    for (int64_t s = 0; s < kSeqBlock; s += kAlign) {
      const uint64_t words[2] = {static_cast<uint64_t>(offset + s),
                                 static_cast<uint64_t>(offset + s) ^ key};
      std::memcpy(buf.get() + s, words, sizeof words);
    }
  };
  const int64_t start = NowNs();
  const int64_t deadline = start + static_cast<int64_t>(seconds * 1e9);
  int64_t written = 0;
  while (written < file_bytes) {
    stamp(written);
    int err = 0;
    Status st = WriteFully(file.fd(), buf.get(), kSeqBlock, written, &err);
    if (!st.ok() && err == EINVAL && file.direct() && written == 0) {
      // Accepted at open, refused for I/O.
      GPUNEX_RETURN_IF_ERROR(file.DropDirect());
      continue;
    }
    GPUNEX_RETURN_IF_ERROR(st);
    written += kSeqBlock;
    if (NowNs() >= deadline) break;
  }
  if (fsync(file.fd()) != 0)
    return Unavailable("fsync after the sequential write failed: " + Errno(errno));
  const int64_t end = NowNs();
  *mb_s = static_cast<double>(written) / (static_cast<double>(end - start) / 1e9) / 1e6;
  if (written < file_bytes && ftruncate(file.fd(), written) != 0) {
    return Unavailable("cannot shorten the test file: " + Errno(errno));
  }
  return written;
}

// Phase 2.
Status SequentialRead(const TestFile& file, int64_t file_bytes, double seconds, double* mb_s) {
  std::unique_ptr<AlignedBuffer> block = SequentialBuffer();
  if (block == nullptr) return Internal("out of memory for the I/O buffer");
  AlignedBuffer& buf = *block;
  file.DropCache();
  const int64_t start = NowNs();
  const int64_t deadline = start + static_cast<int64_t>(seconds * 1e9);
  int64_t done = 0;
  while (done < file_bytes) {
    const ssize_t r = pread(file.fd(), buf.get(), kSeqBlock, done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return Unavailable("sequential read failed: " + Errno(errno));
    }
    if (r == 0) return Internal("the test file ended early at byte " + std::to_string(done));
    done += r;
    if (NowNs() >= deadline) break;
  }
  *mb_s = static_cast<double>(done) / (static_cast<double>(NowNs() - start) / 1e9) / 1e6;
  return Status::Ok();
}

struct RandomFigures {
  uint64_t reads = 0;
  int64_t elapsed_ns = 0;
  LatencyHistogram latency;
};

// Phase 3 with io_uring. kUnavailable with `*refused` set when io_uring cannot be used
// at all (nothing was measured then).
Status RandomReadUring(const TestFile& file, int64_t blocks, int depth, double seconds,
                       RandomFigures* out, bool* refused) {
  io_uring ring;
  const int rc = io_uring_queue_init(static_cast<unsigned>(depth), &ring, 0);
  if (rc < 0) {
    *refused = true;
    return Unavailable("io_uring: " + Errno(-rc));
  }
  // Owned by the guard: when reads could not be waited for (a failing ring), the buffers
  // they read into are leaked rather than freed under the kernel.
  struct RingGuard {
    io_uring* r;
    void* bufs = nullptr;
    bool leak = false;
    ~RingGuard() {
      io_uring_queue_exit(r);
      if (!leak) std::free(bufs);
    }
  } guard{&ring};
  if (posix_memalign(&guard.bufs, kAlign, static_cast<size_t>(depth) * kRandBlock) != 0) {
    guard.bufs = nullptr;
    return Internal("out of memory for the I/O buffers");
  }
  char* const bufs = static_cast<char*>(guard.bufs);
  std::vector<int64_t> issued_at(static_cast<size_t>(depth));
  Rng rng(RandomSeed());
  auto queue = [&](int slot) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);  // never null: at most `depth` in flight
    const int64_t offset =
        static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(blocks)) * kRandBlock;
    io_uring_prep_read(sqe, file.fd(), bufs + static_cast<size_t>(slot) * kRandBlock, kRandBlock,
                       static_cast<uint64_t>(offset));
    io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(slot));
    issued_at[static_cast<size_t>(slot)] = NowNs();
  };

  // Each read is submitted as soon as the one before it in its slot has completed (as
  // fio does), rather than in batches: resubmitting a reaped batch at once lets a device
  // that completes in batches fall into lockstep with it (on the virtual disk of
  // docs/benchmarks.md: 72k instead of 86k IOPS).
  const int64_t start = NowNs();
  const int64_t deadline = start + static_cast<int64_t>(seconds * 1e9);
  for (int slot = 0; slot < depth; ++slot) queue(slot);
  int in_flight = 0;
  bool stopping = false;
  Status failure;
  int64_t stopped_at = 0;
  auto stop = [&](Status why, int64_t now) {
    if (failure.ok()) failure = std::move(why);
    if (!stopping) {
      stopping = true;
      stopped_at = now;
    }
  };
  auto submit = [&] {
    for (int attempt = 0;; ++attempt) {
      const int sr = io_uring_submit(&ring);
      if (sr >= 0) {
        in_flight += sr;
        return;
      }
      if ((sr == -EINTR || sr == -EAGAIN || sr == -EBUSY) && attempt < 1000) {
        if (in_flight > 0) return;  // retried after the next completion
        continue;
      }
      // What was queued but not submitted will not complete.
      stop(Unavailable("io_uring submit failed: " + Errno(-sr)), NowNs());
      return;
    }
  };
  submit();
  while (in_flight > 0) {
    io_uring_cqe* first;
    int wr = io_uring_peek_cqe(&ring, &first);
    if (wr == -EAGAIN) wr = io_uring_wait_cqe(&ring, &first);
    if (wr < 0) {
      if (wr == -EINTR) continue;
      stop(Unavailable("io_uring wait failed: " + Errno(-wr)), NowNs());
      guard.leak = true;  // the reads in flight cannot be waited for
      break;
    }
    const int64_t now = NowNs();
    if (!stopping && now >= deadline) stop(Status::Ok(), now);
    unsigned head;
    unsigned seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      --in_flight;
      const int slot = static_cast<int>(io_uring_cqe_get_data64(cqe));
      if (cqe->res != kRandBlock) {
        stop(Unavailable(cqe->res < 0
                             ? "random read failed: " + Errno(-cqe->res)
                             : "random read returned " + std::to_string(cqe->res) + " bytes"),
             now);
        continue;
      }
      if (stopping) continue;  // after the deadline: drained, not counted
      // Completions keep arriving while this loop submits: each is timed when it is seen.
      out->latency.Add(NowNs() - issued_at[static_cast<size_t>(slot)]);
      ++out->reads;
      queue(slot);
      submit();
    }
    io_uring_cq_advance(&ring, seen);
    if (!stopping && io_uring_sq_ready(&ring) > 0) submit();
  }
  GPUNEX_RETURN_IF_ERROR(failure);
  out->elapsed_ns = stopped_at - start;
  return Status::Ok();
}

// Phase 3 without io_uring: `depth` threads, each with one synchronous read in flight.
Status RandomReadThreads(const TestFile& file, int64_t blocks, int depth, double seconds,
                         RandomFigures* out) {
  struct Worker {
    RandomFigures figures;
    int64_t ended_at = 0;
    Status status;
  };
  std::vector<Worker> workers(static_cast<size_t>(depth));
  const int64_t start = NowNs();
  const int64_t deadline = start + static_cast<int64_t>(seconds * 1e9);
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  threads.reserve(workers.size());
  for (Worker& w : workers) {
    threads.emplace_back([&file, &w, &failed, blocks, deadline] {
      AlignedBuffer buf(kRandBlock);
      Rng rng(RandomSeed());
      int64_t now = NowNs();
      while (now < deadline && !failed.load(std::memory_order_relaxed)) {
        const int64_t offset =
            static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(blocks)) * kRandBlock;
        const ssize_t r = pread(file.fd(), buf.get(), kRandBlock, offset);
        const int64_t done = NowNs();
        if (r != kRandBlock) {
          if (r < 0 && errno == EINTR) continue;
          w.status = Unavailable(r < 0 ? "random read failed: " + Errno(errno)
                                       : "random read returned " + std::to_string(r) + " bytes");
          failed = true;
          break;
        }
        w.figures.latency.Add(done - now);
        ++w.figures.reads;
        now = done;
      }
      w.ended_at = now;
    });
  }
  for (std::thread& t : threads) t.join();
  int64_t ended = start;
  for (const Worker& w : workers) {
    GPUNEX_RETURN_IF_ERROR(w.status);
    out->reads += w.figures.reads;
    out->latency.Merge(w.figures.latency);
    ended = std::max(ended, w.ended_at);
  }
  out->elapsed_ns = ended - start;
  return Status::Ok();
}

}  // namespace

namespace internal {

StatusOr<StorageResult> RunStorageBenchmarkWithHooks(const StorageOptions& o,
                                                     const StorageHooks& hooks) {
  GPUNEX_RETURN_IF_ERROR(Validate(o));
  const int64_t file_bytes = o.file_bytes / kSeqBlock * kSeqBlock;
  GPUNEX_RETURN_IF_ERROR(CheckSpace(o.dir, file_bytes, o.keep_free_bytes));

  TestFile file;
  GPUNEX_RETURN_IF_ERROR(file.Open(o.dir, !hooks.refuse_direct_io));
  StorageResult result;
  GPUNEX_ASSIGN_OR_RETURN(result.file_bytes, SequentialWrite(file, file_bytes, o.seconds_per_phase,
                                                             &result.seq_write_mb_s));
  if (hooks.after_write) hooks.after_write(file.fd(), result.file_bytes);
  result.direct_io = file.direct();
  if (!result.direct_io) {
    LogWarn("bench.storage_buffered",
            {{"dir", o.dir},
             {"message", "the file system refused O_DIRECT: buffered I/O, caches dropped"}});
  }
  GPUNEX_RETURN_IF_ERROR(
      SequentialRead(file, result.file_bytes, o.seconds_per_phase, &result.seq_read_mb_s));

  file.DropCache();
  if (!file.direct()) posix_fadvise(file.fd(), 0, 0, POSIX_FADV_RANDOM);
  const int64_t blocks = result.file_bytes / kRandBlock;
  RandomFigures random;
  bool refused = hooks.refuse_io_uring;
  if (!refused) {
    Status st =
        RandomReadUring(file, blocks, o.queue_depth, o.seconds_per_phase, &random, &refused);
    if (!st.ok() && !refused) return st;
    if (refused)
      LogWarn("bench.storage_no_io_uring", {{"error", st.message()}, {"message", "using threads"}});
  }
  if (refused) {
    result.io_uring = false;
    random = RandomFigures();
    GPUNEX_RETURN_IF_ERROR(
        RandomReadThreads(file, blocks, o.queue_depth, o.seconds_per_phase, &random));
  }
  if (random.reads == 0 || random.elapsed_ns <= 0) return Unavailable("no random read completed");
  result.rand_read_iops =
      static_cast<double>(random.reads) / (static_cast<double>(random.elapsed_ns) / 1e9);
  result.rand_read_p50_us = random.latency.Quantile(0.50) / 1e3;
  result.rand_read_p99_us = random.latency.Quantile(0.99) / 1e3;
  return result;
}

}  // namespace internal

StatusOr<StorageResult> RunStorageBenchmark(const StorageOptions& o) {
  return internal::RunStorageBenchmarkWithHooks(o, internal::StorageHooks());
}

}  // namespace gpunex::agent::bench
