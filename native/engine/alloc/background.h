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
// more to the thread. discard(p, len) gives back the pages of a range that its owner will only
// read as zeros from now on (MADV_DONTNEED: a later read sees zeros and holds no memory): the
// moved part of a hash table being migrated (hash_table.h). Requests run in order, so a populate
// or discard never runs after the unmap of its range.
//
// Bounds: the queue is a fixed ring of kQueue requests and never allocates; when it is full,
// unmap() and discard() run at once and populate() drops the request (the owner then faults lazily, as
// without this thread). If the thread cannot be started, both work the same way. A kernel
// without MADV_POPULATE_WRITE makes populate a no-op. wait_idle() (tests, and process exit)
// waits for the queue to drain. The thread is started at the first request and lives, detached,
// until the process exits (the worker is never destroyed, so a late free still finds it).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// populate(p, len), unmap(p, len), discard(p, len): queue a request (see above). wait_idle(): blocks until every
// queued request has run. pending(): requests queued or running.
namespace ce {
namespace background {
namespace detail {

enum class Kind { kPopulate, kUnmap, kDiscard };

struct Request {
  void* p;
  size_t len;
  Kind kind;
};

inline void run(const Request& r) noexcept {
#if defined(__linux__)
  if (r.kind == Kind::kUnmap) munmap(r.p, r.len);
  else if (r.kind == Kind::kDiscard) madvise(r.p, r.len, MADV_DONTNEED);
  else madvise(r.p, r.len, MADV_POPULATE_WRITE);  // EINVAL on an older kernel: nothing happens
#else
  (void)r;
#endif
}

class Worker {
 public:
  static constexpr size_t kQueue = 1024;

  void submit(const Request& r) noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) start();
    if (!running_ || count_ == kQueue) {
      lock.unlock();
      if (r.kind != Kind::kPopulate) run(r);  // a populate is only a hint: drop it
      return;
    }
    ring_[(head_ + count_) % kQueue] = r;
    count_++;
    lock.unlock();
    wake_.notify_one();
  }

  void wait_idle() noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return count_ == 0 && !busy_; });
  }

  size_t pending() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    return count_ + (busy_ ? 1 : 0);
  }

 private:
  // REQUIRES: mu_ held.
  void start() noexcept {
    started_ = true;
    try {
      std::thread([this] { loop(); }).detach();
      running_ = true;
    } catch (...) {
      running_ = false;  // no thread: every request runs (or is dropped) in the caller
    }
  }

  void loop() noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return count_ > 0; });
      const Request r = ring_[head_];
      head_ = (head_ + 1) % kQueue;
      count_--;
      busy_ = true;
      lock.unlock();
      run(r);
      lock.lock();
      busy_ = false;
      if (count_ == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  Request ring_[kQueue];
  size_t head_ = 0;
  size_t count_ = 0;
  bool busy_ = false;
  bool started_ = false;
  bool running_ = false;
};

// Never destroyed: a space freed late in the process's exit may still hand it a mapping, and the
// detached thread may still be waiting on it.
inline Worker& worker() {
  static Worker* w = new Worker;
  return *w;
}

}  // namespace detail

inline void populate(void* p, size_t len) noexcept { detail::worker().submit(detail::Request{p, len, detail::Kind::kPopulate}); }
inline void unmap(void* p, size_t len) noexcept { detail::worker().submit(detail::Request{p, len, detail::Kind::kUnmap}); }
inline void discard(void* p, size_t len) noexcept { detail::worker().submit(detail::Request{p, len, detail::Kind::kDiscard}); }
inline void wait_idle() noexcept { detail::worker().wait_idle(); }
inline size_t pending() noexcept { return detail::worker().pending(); }

}  // namespace background
}  // namespace ce
