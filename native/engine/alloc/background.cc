#include "alloc/background.h"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

namespace ce {
namespace background {
namespace {

struct Request {
  void* p;
  size_t len;
  bool unmap;
};

void run(const Request& r) noexcept {
#if defined(__linux__)
  if (r.unmap) munmap(r.p, r.len);
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
      if (r.unmap) run(r);  // a populate is only a hint: drop it
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
Worker& worker() {
  static Worker* w = new Worker;
  return *w;
}

}  // namespace

void populate(void* p, size_t len) noexcept { worker().submit(Request{p, len, false}); }
void unmap(void* p, size_t len) noexcept { worker().submit(Request{p, len, true}); }
void wait_idle() noexcept { worker().wait_idle(); }
size_t pending() noexcept { return worker().pending(); }

}  // namespace background
}  // namespace ce
