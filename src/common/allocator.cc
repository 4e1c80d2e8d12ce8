#include "common/allocator.h"

#include <malloc.h>

namespace gpunex {

bool KeepFreedMemoryForReuse() {
  const bool trim = mallopt(M_TRIM_THRESHOLD, kKeptFreeBytes) == 1;
  const bool mmap = mallopt(M_MMAP_THRESHOLD, kKeptFreeBytes) == 1;
  return trim && mmap;
}

}  // namespace gpunex
