// Zeroed allocations for large flat arrays (hash tables, the tuple arena's and the node pools'
// 2 MiB chunks).
//
// Arrays of at least 2 MiB are mapped 2 MiB-aligned, in whole 2 MiB blocks, so that each block
// can be given back (big_discard) or faulted in ahead (background.h) as a unit. They are marked
// MADV_NOHUGEPAGE: 4 KiB pages, even where transparent huge pages are set to `always`.
// Huge pages would spare a random probe into tens of megabytes its TLB miss, but on virtual
// machines a huge page's first fault stalls the *other* virtual CPUs: measured on these KVM
// guests (2026-11-26), a thread faulting fresh huge pages on one CPU made the hypervisor take the
// other CPU away for 150 ms in 20 s (steal time, in pauses of several milliseconds), where the same
// thread faulting 4 KiB pages took nothing; and 10M single inserts had an insert over 5 ms outside
// any V8 collection in each of four loads with huge pages, none in four without (scripts/stalls.mjs,
// README "Huge pages and the other CPU"). CAPPED_EXPIRATIOND_HUGE_PAGES=1 in the environment (read once,
// at the first big allocation) asks for MADV_HUGEPAGE instead, for bare metal, where a huge
// page's fault costs about 0.25 ms on the faulting thread alone.
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

constexpr size_t kHugePage = size_t(2) << 20;  // the block size of big mappings (a huge page's size)
constexpr size_t kSmallPage = 4096;

// Whether the environment's CAPPED_EXPIRATIOND_HUGE_PAGES value (nullptr: unset) asks for huge
// pages: exactly "1".
inline bool huge_pages_wanted(const char* value) { return value != nullptr && value[0] == '1' && value[1] == '\0'; }

// Whether big mappings are marked MADV_HUGEPAGE (else MADV_NOHUGEPAGE): the environment, read once.
inline bool huge_pages() {
  static const bool on = huge_pages_wanted(std::getenv("CAPPED_EXPIRATIOND_HUGE_PAGES"));
  return on;
}

// What big_calloc(bytes) really takes: big mappings are whole 2 MiB blocks.
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
    // process-wide mmap lock for that fault, which would be the 2 MiB fault of a huge page:
    // milliseconds during which every mmap or munmap in the process (V8's included) waits. So
    // the first fault is a 4 KiB page of the slack about to be unmapped (never inside a whole
    // 2 MiB block of the mapping, so never a huge page); the array's faults then take only
    // the mapping's own lock.
    const uintptr_t first = (raw_end & (kHugePage - 1)) != 0 ? raw_end - kSmallPage : base;
    *reinterpret_cast<volatile uint8_t*>(first) = 0;
    if (start > base) munmap(raw, start - base);
    if (raw_end > tail) munmap(reinterpret_cast<void*>(tail), raw_end - tail);
    madvise(reinterpret_cast<void*>(start), len, huge_pages() ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
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
