// NodePool: fixed-size blocks for the nodes of one B+tree.
//
// malloc is a poor fit for B+tree nodes: a 512-byte block is too big for glibc's fast bins, so
// every free coalesces with its neighbours (cache misses on unrelated memory), and a profile of
// the expiry loop showed a fifth of its time in malloc and free. The pool instead carves blocks
// from chunks and keeps freed blocks on a free list, so take() and give() are a few instructions
// on memory that is already in cache. Chunks start at 4 KiB and double up to 2 MiB; from then on
// each chunk is a 2 MiB block (big_alloc.h: 4 KiB pages by default; with huge pages, which the
// environment can ask for, a descent through a large tree does not also miss the TLB at every level).
//
// Freed blocks are reused by later inserts, not returned to the system, until reset() (the tree
// was cleared or emptied) or the pool's destruction; reserved() counts every chunk.
//
// From the last chunk under 2 MiB on, the pool keeps the next 2 MiB one allocated ahead
// (next_chunk_) as address space only (an untouched mapping holds no memory); when three
// quarters of the current chunk are carved (populate_at_: 1,024 nodes before it is needed) the
// background thread (background.h) faults in the pages of the chunk take() starts next (that one,
// or one that reserve() set aside), so that no take() pays the kernel's zeroing of fresh
// pages. reserved() counts the chunk ahead from the moment its pages were asked for.
//
// Built with CE_TUPLE_MALLOC (the sanitizer build and the native stress test), every block is
// its own operator new allocation, so AddressSanitizer sees each node and injected allocation
// failures reach every node allocation.
//
// reserve(n) makes the next n take() calls infallible: in the pool build by setting whole chunks
// aside, untouched, until they, the free list and the rest of the current chunk hold n blocks
// (take() starts them when the current chunk runs out), in the CE_TUPLE_MALLOC build by
// allocating n spare blocks ahead. The B+tree uses it so that a rollback never allocates (see
// btree.h). Every allocation passes fault::point() (alloc/fault.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "alloc/big_alloc.h"
#include "alloc/fault.h"

namespace ce {

template <size_t kBlock>
class NodePool {
  static_assert(kBlock >= sizeof(void*) && kBlock % alignof(std::max_align_t) == 0, "block size");

 public:
  NodePool() = default;
  NodePool(const NodePool&) = delete;
  NodePool& operator=(const NodePool&) = delete;
  ~NodePool() { reset(); }

  // A block of kBlock bytes; throws std::bad_alloc.
  void* take() {
#ifdef CE_TUPLE_MALLOC
    if (!spare_.empty()) {
      void* p = spare_.back();
      spare_.pop_back();
      return p;
    }
    fault::point();
    void* p = ::operator new(kBlock);
    reserved_ += kBlock;
    return p;
#else
    if (free_ != nullptr) {
      FreeBlock* b = free_;
      free_ = b->next;
      free_count_--;
      return b;
    }
    if (next_ == end_) grow();
    else if (next_ == populate_at_) populate_next();
    void* p = next_;
    next_ += kBlock;
    return p;
#endif
  }

  // REQUIRES: p came from take() and is not given back yet.
  void give(void* p) {
#ifdef CE_TUPLE_MALLOC
    ::operator delete(p);
    reserved_ -= kBlock;
#else
    FreeBlock* b = static_cast<FreeBlock*>(p);
    b->next = free_;
    free_ = b;
    free_count_++;
#endif
  }

  // How many take() calls can run without allocating.
  size_t available() const {
#ifdef CE_TUPLE_MALLOC
    return spare_.size();
#else
    return free_count_ + size_t(end_ - next_) / kBlock + ready_blocks_;
#endif
  }

  // Makes available() >= n. Throws std::bad_alloc; the blocks reserved before the failure stay
  // reserved (they are free blocks, nothing depends on them yet).
  void reserve(size_t n) {
#ifdef CE_TUPLE_MALLOC
    if (spare_.size() >= n) return;
    fault::point();
    spare_.reserve(n);
    while (spare_.size() < n) {
      fault::point();
      spare_.push_back(::operator new(kBlock));
      reserved_ += kBlock;
    }
#else
    // Whole chunks, set aside untouched: take() starts them when the current one runs out. A
    // reserve writes nothing, so the kernel zeroes their pages only if a rollback uses them
    // (threading them onto the free list wrote every block: a chunk's first reserve of a few
    // MiB faulted huge pages in, 5-8 ms each on these VMs).
    while (available() < n) {
      fault::point();
      ready_.reserve(ready_.size() + 1);
      const Chunk c = new_chunk();
      ready_.push_back(c);
      ready_blocks_ += c.bytes / kBlock;
    }
#endif
  }

  // Frees the spare blocks of the CE_TUPLE_MALLOC build (the pool build keeps its free blocks).
  void release_spares() {
#ifdef CE_TUPLE_MALLOC
    for (void* p : spare_) ::operator delete(p);
    reserved_ -= spare_.size() * kBlock;
    spare_.clear();
    spare_.shrink_to_fit();
#endif
  }

  // Frees every chunk: every block taken is gone. In the CE_TUPLE_MALLOC build the owner must
  // have given every block back first.
  void reset() {
    release_spares();
    for (const Chunk& c : chunks_) free_chunk(c);
    chunks_.clear();
    if (next_chunk_ != nullptr) big_free(next_chunk_, kHugePage);
    next_chunk_ = nullptr;
    next_counted_ = false;
    populate_at_ = nullptr;
    ready_.clear();
    ready_blocks_ = 0;
    free_ = nullptr;
    free_count_ = 0;
    next_ = end_ = nullptr;
#ifndef CE_TUPLE_MALLOC
    reserved_ = 0;
#endif
  }

  size_t reserved() const { return reserved_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  struct Chunk {
    void* p;
    size_t bytes;
  };
  static constexpr size_t kFirstChunk = 4096;

  // Starts the next chunk: one that reserve() set aside, or a new one. REQUIRES: next_ == end_.
  void grow() {
    if (!ready_.empty()) {
      const Chunk c = ready_.back();
      ready_.pop_back();
      ready_blocks_ -= c.bytes / kBlock;
      start(c);
      return;
    }
    start(new_chunk());
  }

  // Allocates the next chunk (in chunks_, counted in reserved()) without starting it. Throws
  // std::bad_alloc with nothing changed.
  Chunk new_chunk() {
    const size_t bytes = chunks_.empty() ? kFirstChunk : std::min(kHugePage, chunks_.back().bytes * 2);
    fault::point();
    chunks_.reserve(chunks_.size() + 1);
    void* p;
    size_t added = bytes;
    if (bytes >= kHugePage) {
      // This chunk is the one allocated ahead (or a new one), and the next is allocated now, as
      // address space: either allocation may throw, with nothing changed. reserved() already
      // counts the one ahead if its pages were asked for.
      p = next_chunk_ != nullptr ? next_chunk_ : big_calloc(bytes);
      void* next;
      try {
        next = big_calloc(kHugePage);
      } catch (...) {
        if (p != next_chunk_) big_free(p, bytes);
        throw;
      }
      if (p == next_chunk_ && next_counted_) added = 0;
      next_chunk_ = next;
      next_counted_ = false;
    } else {
      fault::point();
      p = ::operator new(bytes);
      if (bytes * 2 >= kHugePage && next_chunk_ == nullptr) {
        // The last chunk before the first huge one: that one is allocated ahead as well.
        try {
          next_chunk_ = big_calloc(kHugePage);
        } catch (...) {
          ::operator delete(p);
          throw;
        }
        next_counted_ = false;
      }
    }
    chunks_.push_back(Chunk{p, bytes});
    reserved_ += added;
    return Chunk{p, bytes};
  }

  // Carves blocks from c from now on; three quarters of the way through, take() asks for the
  // pages of the chunk that comes after it (populate_next), if that one is a 2 MiB chunk.
  void start(const Chunk& c) {
    next_ = static_cast<uint8_t*>(c.p);
    end_ = next_ + c.bytes / kBlock * kBlock;
    const bool huge_next =
        !ready_.empty() ? ready_.back().bytes >= kHugePage : next_chunk_ != nullptr && !next_counted_;
    populate_at_ = huge_next ? next_ + c.bytes / kBlock * 3 / 4 * kBlock : nullptr;
  }

  // Asks the background thread for the pages of the chunk take() starts next: the last one
  // reserve() set aside (counted already), or the one allocated ahead (counted from now).
  void populate_next() {
    populate_at_ = nullptr;
    if (!ready_.empty()) {
      const Chunk& c = ready_.back();
      if (c.bytes >= kHugePage) background::populate(c.p, c.bytes);
      return;
    }
    if (next_chunk_ == nullptr || next_counted_) return;
    background::populate(next_chunk_, kHugePage);
    reserved_ += kHugePage;
    next_counted_ = true;
  }
  static void free_chunk(const Chunk& c) {
    if (c.bytes >= kHugePage) big_free(c.p, c.bytes);
    else ::operator delete(c.p);
  }

  std::vector<Chunk> chunks_;
  void* next_chunk_ = nullptr;  // the next 2 MiB chunk, allocated ahead (pool build)
  bool next_counted_ = false;   // its pages were asked for (reserved() counts it)
  uint8_t* populate_at_ = nullptr;  // where take() asks for the next chunk's pages; null once asked
  std::vector<Chunk> ready_;    // chunks reserve() set aside, untouched; take() starts the last
  size_t ready_blocks_ = 0;     // the blocks in ready_
  FreeBlock* free_ = nullptr;
  size_t free_count_ = 0;
#ifdef CE_TUPLE_MALLOC
  std::vector<void*> spare_;  // reserve()'s blocks
#endif
  uint8_t* next_ = nullptr;
  uint8_t* end_ = nullptr;
  size_t reserved_ = 0;
};

}  // namespace ce
