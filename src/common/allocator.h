#ifndef GPUNEX_COMMON_ALLOCATOR_H_
#define GPUNEX_COMMON_ALLOCATOR_H_

// How the processes that relay bytes (gpunexd, the agent) use glibc's allocator.
//
// The data channel moves each frame through a buffer of its own (common/mux.h): many
// allocations of up to 64 KiB, freed soon after on another thread. With glibc's
// defaults, freed memory at the top of a heap is given back to the kernel once 128 KiB
// of it is free, and taken again a moment later, each page faulted in and zeroed anew:
// relay_bench measured 127 000 page faults per GiB relayed and a third of the relay's
// throughput (docs/benchmarks.md). Keeping up to 4 MiB free per heap, and serving
// allocations under 4 MiB from the heaps rather than from fresh mappings, ends that, for
// at most that much memory kept per heap.

namespace gpunex {

inline constexpr int kKeptFreeBytes = 4 << 20;

// Call at the start of main, before threads start. False when glibc refused a setting.
bool KeepFreedMemoryForReuse();

}  // namespace gpunex

#endif  // GPUNEX_COMMON_ALLOCATOR_H_
