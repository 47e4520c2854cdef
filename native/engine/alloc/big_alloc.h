// Zeroed allocations for large flat arrays (hash tables), backed by transparent huge pages.
//
// A random probe into a table of tens of megabytes misses the TLB as well as the cache: with
// 4 KiB pages the hardware walks the page tables before it can even start the load. Arrays of
// at least 2 MiB are therefore mapped 2 MiB-aligned and marked MADV_HUGEPAGE, which the kernel
// honours when transparent huge pages are set to `madvise` or `always` (the usual defaults) and
// ignores otherwise. Smaller arrays come from calloc.
//
// The kernel's slow parts of such a mapping go to a background thread (background.h): freeing
// (munmap) always, and, for an array allocated ahead of need (`ahead`), faulting its pages in,
// so that neither lands in one insert, truncate() or drop(). big_discard() gives back pages of a
// mapping that are known to be zeros again (a hash table's migrated part).
//
// The sanitizer build (CE_TUPLE_MALLOC) always uses calloc, so that AddressSanitizer sees every
// array and reports any access past its end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

#include "alloc/background.h"
#include "alloc/fault.h"

#if defined(__linux__) && !defined(CE_TUPLE_MALLOC)
#include <sys/mman.h>
#define CE_BIG_MMAP 1
#endif

namespace ce {

constexpr size_t kHugePage = size_t(2) << 20;
constexpr size_t kSmallPage = 4096;

// What big_calloc(bytes) really takes: huge-page mappings are whole 2 MiB pages.
inline size_t big_size(size_t bytes) {
#ifdef CE_BIG_MMAP
  if (bytes >= kHugePage) return (bytes + kHugePage - 1) & ~(kHugePage - 1);
#endif
  return bytes;
}

// Whether big_calloc(bytes) maps whole 2 MiB pages of its own (which big_discard may give back).
inline bool big_mapped(size_t bytes) {
#ifdef CE_BIG_MMAP
  return bytes >= kHugePage;
#else
  (void)bytes;
  return false;
#endif
}

// Gives back the pages of [p, p + len), whole 2 MiB pages inside a big_mapped() array that the
// owner will only read as zeros from now on; the background thread does it (a later read sees
// zeros and holds no memory).
inline void big_discard(void* p, size_t len) {
  if (len != 0) background::discard(p, len);
}

// Returns `bytes` zeroed bytes; throws std::bad_alloc. ahead: the caller will not touch them
// for a while; fault the pages in from the background thread meanwhile.
inline void* big_calloc(size_t bytes, bool ahead = false) {
  fault::point();
#ifdef CE_BIG_MMAP
  if (bytes >= kHugePage) {
    const size_t len = big_size(bytes);
    const size_t raw_len = len + kHugePage + kSmallPage;
    void* raw = mmap(nullptr, raw_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const uintptr_t base = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t start = (base + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t tail = start + len, raw_end = base + raw_len;
    // The mapping's first page fault sets up its reverse map, and the kernel takes the
    // process-wide mmap lock for that fault, which would then be the 2 MiB fault of a huge page:
    // milliseconds during which every mmap or munmap in the process (V8's included) waits. So
    // the first fault is a 4 KiB page of the slack about to be unmapped (never inside a whole
    // 2 MiB block of the mapping, so never a huge page); the array's faults then take only
    // the mapping's own lock.
    const uintptr_t first = (raw_end & (kHugePage - 1)) != 0 ? raw_end - kSmallPage : base;
    *reinterpret_cast<volatile uint8_t*>(first) = 0;
    if (start > base) munmap(raw, start - base);
    if (raw_end > tail) munmap(reinterpret_cast<void*>(tail), raw_end - tail);
    madvise(reinterpret_cast<void*>(start), len, MADV_HUGEPAGE);
    if (ahead) background::populate(reinterpret_cast<void*>(start), len);
    return reinterpret_cast<void*>(start);
  }
#endif
  (void)ahead;
  void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

// Frees what big_calloc(bytes) returned (the same `bytes`).
inline void big_free(void* p, size_t bytes) {
  if (p == nullptr) return;
#ifdef CE_BIG_MMAP
  if (bytes >= kHugePage) {
    background::unmap(p, big_size(bytes));
    return;
  }
#endif
  (void)bytes;
  std::free(p);
}

}  // namespace ce
