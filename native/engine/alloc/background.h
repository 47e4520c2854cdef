// Background: one process-wide thread that does the kernel's slow part of large mappings away
// from the JavaScript thread (issue 12: no single call may pause for long).
//
// Two costs grow with a space and used to land in one call:
//   - The first write to a fresh 2 MiB huge page faults, and the kernel zeroes all 2 MiB in that
//     fault: about 0.25 ms, and 2.6 ms measured on a busy machine. An insert that opened a new
//     arena chunk, node-pool chunk or hash table paid it, several times when a hash migration
//     scattered its first moves over untouched pages.
//   - munmap() of a mapping returns its pages to the kernel: about 22 ms for the 10M-tuple
//     space's arena, tree pool and hash table at truncate() or drop().
// populate(p, len) asks the thread to fault the pages in with MADV_POPULATE_WRITE (Linux 5.14),
// which touches no byte, so it is safe while the owner already writes there; the owners
// (tuple_arena.h, node_pool.h, hash_table.h) allocate their next block ahead of need, so its
// pages are in by the time it is used. unmap(p, len) hands a mapping that nothing refers to any
// more to the thread. Requests run in order, so a populate never runs after the unmap of its
// range.
//
// Bounds: the queue is a fixed ring of kQueue requests and never allocates; when it is full,
// unmap() unmaps at once and populate() drops the request (the owner then faults lazily, as
// without this thread). If the thread cannot be started, both work the same way. A kernel
// without MADV_POPULATE_WRITE makes populate a no-op. wait_idle() (tests, and process exit)
// waits for the queue to drain. The thread is started at the first request and lives, detached,
// until the process exits (the worker is never destroyed, so a late free still finds it).
#pragma once

#include <cstddef>

namespace ce {
namespace background {

void populate(void* p, size_t len) noexcept;
void unmap(void* p, size_t len) noexcept;
// Blocks until every queued request has run.
void wait_idle() noexcept;
// Requests queued or running.
size_t pending() noexcept;

}  // namespace background
}  // namespace ce
