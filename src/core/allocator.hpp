#pragma once
/// The allocator settings every normcheck process uses (the CLI and the Python module alike).
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace normcheck {

/// Keeps freed memory for reuse instead of handing it back to the kernel. With glibc's defaults a
/// case's vectors above 128 KiB are mmapped and unmapped per case (until the dynamic threshold has
/// grown), and every reuse page-faults its memory in again: on the oracle benchmark's ball path that
/// was most of its time (docs/performance.md, "The a priori level"). Allocations above 32 MiB (glibc's
/// largest dynamic threshold) stay mmapped; freed heap is kept up to 512 MiB.
inline void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
#endif
}

}  // namespace normcheck
