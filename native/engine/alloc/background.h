// Background: two process-wide threads that do the kernel's slow part of large mappings away
// from the JavaScript thread (issue 12: no single call may pause for long).
//
// Two costs grow with a space and used to land in one call:
//   - The first write to a fresh 2 MiB huge page faults, and the kernel zeroes all 2 MiB in that
//     fault: about 0.25 ms on a typical server, and 5-8 ms measured on these VMs, where the host
//     backs the guest's memory on first touch. (Big mappings now take 4 KiB pages unless the
//     environment asks for huge ones, big_alloc.h; faulting them ahead still keeps each insert's
//     share of the kernel's work off the JavaScript thread.) An insert that opened a new arena chunk,
//     node-pool chunk or hash table paid it, several times when a hash migration scattered its
//     first moves over untouched pages.
//   - munmap() of a mapping returns its pages to the kernel: about 22 ms for the 10M-tuple
//     space's arena, tree pool and hash table at truncate() or drop().
// populate(p, len) asks the populating thread to fault the pages in by writing them with an
// atomic add of zero, which changes no byte, so it is safe while the owner already writes there;
// the owners (tuple_arena.h, node_pool.h, hash_table.h) allocate their next block ahead of need,
// so its pages are in by the time it is used. unmap(p, len) hands a mapping that nothing refers
// to any more to the releasing thread. discard(p, len) gives back the pages of a range that its
// owner will only read as zeros from now on (MADV_DONTNEED: a later read sees zeros and holds
// no memory): the moved part of a hash table being migrated (hash_table.h).
//
// Why these choices (measured with perf on a 4M-insert load, issue 12):
//   - Faults, not MADV_POPULATE_WRITE: that madvise holds the process-wide mmap lock for the
//     whole range, so every mmap or munmap in the process (ours, V8's, malloc's) waited for a
//     2 MiB zeroing, and one insert in about twenty arena chunks paused 2-8 ms. A fault takes
//     only its mapping's lock (big_alloc.h makes sure of that).
//   - The populating thread runs at nice 19: it only works ahead, and when it competed for the
//     second core with V8's parallel scavenger at equal priority, the JavaScript thread waited
//     in the scavenge for the scavenger's helper (2-5 ms inserts). (SCHED_IDLE was tried: it
//     starved the thread so that inserts faulted the pages themselves.) It holds no lock that
//     the JavaScript thread waits for. unmap and discard take the mmap lock, so they run on the
//     releasing thread at normal priority: a starved thread must never hold that lock.
//   - Ordering: a populate never runs after the unmap or discard of its range. Submitting an
//     unmap or discard drops the queued populates that overlap it and stops the running one at
//     its next page; the releasing thread waits for that populate to stop before it unmaps.
//     Unmaps and discards run in the order they came.
//
// Bounds: each queue is a fixed ring of kQueue requests and never allocates. When the populate
// queue is full, or its thread cannot be started, populate() drops the request (the owner then
// faults lazily, as without these threads); when the release queue is full, or its thread cannot
// be started, unmap() and discard() run at once in the caller (after the overlapping populate
// stops). wait_idle() (tests, and process exit) waits for both queues to drain. The threads
// are started at the first request and live, detached, until the process exits (the worker is
// never destroyed, so a late free still finds it).
//
// So the library that holds their code must stay mapped until the process exits. Node unloads
// (dlcloses) an addon when the last environment that loaded it is torn down: in a process where
// only worker threads load it, the first worker to exit took the threads' code with it and the
// process died of SIGSEGV. Before it starts the threads, start() takes one more reference to the
// library with RTLD_NODELETE (pin_library); if that fails, no thread is started and every
// request runs as when a thread cannot be started.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#endif
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
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

inline bool overlaps(const Request& r, const Request& q) {
  const uintptr_t a = reinterpret_cast<uintptr_t>(r.p), b = reinterpret_cast<uintptr_t>(q.p);
  return r.len != 0 && q.len != 0 && a < b + q.len && b < a + r.len;
}

// Write-faults every 4 KiB page of [p, p + len) without changing a byte (an atomic add of zero
// cannot lose a store the owner makes to the same byte meanwhile); stops early once `stop` is set.
inline void touch(void* p, size_t len, const std::atomic<bool>& stop) noexcept {
  uint8_t* b = static_cast<uint8_t*>(p);
  for (size_t off = 0; off < len; off += 4096) {
    if (stop.load(std::memory_order_relaxed)) return;
    __atomic_fetch_add(b + off, uint8_t(0), __ATOMIC_RELAXED);
  }
}

// Keeps the library that holds this code mapped until the process exits (see above). Returns
// whether it is pinned. The addon's build defines CE_SHARED_LIBRARY (binding.gyp); a program
// linked with this code (the native tests) has nothing to pin.
inline bool pin_library() noexcept {
#if !defined(CE_SHARED_LIBRARY)
  return true;
#elif defined(__unix__) || defined(__APPLE__)
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&pin_library), &info) == 0 || info.dli_fname == nullptr) return false;
  return dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE) != nullptr;
#else
  return false;
#endif
}

inline void release(const Request& r) noexcept {
#if defined(__linux__)
  if (r.kind == Kind::kUnmap) munmap(r.p, r.len);
  else madvise(r.p, r.len, MADV_DONTNEED);
#else
  (void)r;
#endif
}

// A fixed ring of requests. REQUIRES (every member): the Worker's mutex held.
struct Ring {
  static constexpr size_t kQueue = 1024;
  Request slots[kQueue];
  size_t head = 0;
  size_t count = 0;

  bool full() const { return count == kQueue; }
  void push(const Request& r) { slots[(head + count++) % kQueue] = r; }
  Request pop() {
    const Request r = slots[head];
    head = (head + 1) % kQueue;
    count--;
    return r;
  }
  // Removes the requests that overlap q, keeping the others in order.
  void drop_overlapping(const Request& q) {
    size_t kept = 0;
    for (size_t i = 0; i < count; i++) {
      const Request r = slots[(head + i) % kQueue];
      if (!overlaps(r, q)) slots[(head + kept++) % kQueue] = r;
    }
    count = kept;
  }
};

class Worker {
 public:
  static constexpr size_t kQueue = Ring::kQueue;
  static constexpr int kPopulateNice = 19;

  void submit(const Request& r) noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    if (!started_) start();
    if (r.kind == Kind::kPopulate) {
      if (!populating_thread_ || populates_.full()) return;  // a populate is only a hint: drop it
      populates_.push(r);
      lock.unlock();
      populate_wake_.notify_one();
      return;
    }
    populates_.drop_overlapping(r);
    if (overlaps(populating_, r)) stop_.store(true, std::memory_order_relaxed);
    if (releasing_thread_ && !releases_.full()) {
      releases_.push(r);
      lock.unlock();
      release_wake_.notify_one();
      return;
    }
    wait_populate_clear(lock, r);
    lock.unlock();
    release(r);
  }

  void wait_idle() noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    idle_.wait(lock, [&] { return pending_locked() == 0; });
  }

  size_t pending() noexcept {
    std::lock_guard<std::mutex> lock(mu_);
    return pending_locked();
  }

 private:
  // REQUIRES: mu_ held.
  size_t pending_locked() const {
    const size_t running = (populating_.len != 0 ? 1 : 0) + (releasing_ ? 1 : 0);
    return populates_.count + releases_.count + running;
  }

  // Waits until the running populate, if any, no longer overlaps r. REQUIRES: mu_ held by lock.
  void wait_populate_clear(std::unique_lock<std::mutex>& lock, const Request& r) {
    populate_done_.wait(lock, [&] { return !overlaps(populating_, r); });
  }

  // REQUIRES: mu_ held.
  void start() noexcept {
    started_ = true;
    if (!pin_library()) return;  // no threads: requests run in the caller or are dropped
    try {
      std::thread([this] { release_loop(); }).detach();
      releasing_thread_ = true;
    } catch (...) {
      releasing_thread_ = false;  // unmaps and discards run in the caller
    }
    try {
      std::thread([this] { populate_loop(); }).detach();
      populating_thread_ = true;
    } catch (...) {
      populating_thread_ = false;  // populates are dropped
    }
  }

  void release_loop() noexcept {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      release_wake_.wait(lock, [&] { return releases_.count > 0; });
      const Request r = releases_.pop();
      releasing_ = true;
      wait_populate_clear(lock, r);
      lock.unlock();
      release(r);
      lock.lock();
      releasing_ = false;
      if (pending_locked() == 0) idle_.notify_all();
    }
  }

  void populate_loop() noexcept {
#if defined(__linux__)
    // Linux's nice is per thread: this one only. Best effort: refused, it runs as is.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), kPopulateNice);
#endif
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      populate_wake_.wait(lock, [&] { return populates_.count > 0; });
      populating_ = populates_.pop();
      stop_.store(false, std::memory_order_relaxed);
      const Request r = populating_;
      lock.unlock();
      touch(r.p, r.len, stop_);
      lock.lock();
      populating_ = Request{nullptr, 0, Kind::kPopulate};
      populate_done_.notify_all();
      if (pending_locked() == 0) idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable populate_wake_;
  std::condition_variable release_wake_;
  std::condition_variable populate_done_;
  std::condition_variable idle_;
  Ring populates_;
  Ring releases_;
  Request populating_{nullptr, 0, Kind::kPopulate};  // the populate running now (len 0: none)
  std::atomic<bool> stop_{false};  // the running populate's range is being unmapped or discarded
  bool releasing_ = false;
  bool started_ = false;
  bool populating_thread_ = false;
  bool releasing_thread_ = false;
};

// Never destroyed: a space freed late in the process's exit may still hand it a mapping, and the
// detached threads may still be waiting on it.
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
