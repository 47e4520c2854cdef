// TupleArena: the allocator that owns every tuple of one space.
//
// A tuple costs its 4-byte header plus its MessagePack, rounded up to 8 bytes. malloc would
// round the same request up to 16 bytes and add 8 bytes of its own header, which is a third of
// a typical 40-byte session tuple. So, as Tarantool's `small` allocator does, tuples up to
// kMaxSmall bytes are carved out of 64 KiB slabs in size classes 8 bytes apart, and each class
// keeps a free list threaded through its freed objects. Larger tuples go to malloc.
//
// Costs: allocation and free are O(1) and touch one cache line. Slabs are kept until the arena
// is reset (truncate) or destroyed, so after a mass expiry the memory is reused by later
// inserts rather than returned to the system; memory() counts whole slabs, free or not.
//
// The first kSmallSlabs slabs are malloc blocks, so a small space costs little. After that,
// slabs are carved from 2 MiB chunks (big_alloc.h: 4 KiB pages by default, huge pages when the
// environment asks; with them a random read of one tuple among millions costs a cache miss but
// not also a TLB miss).
// The first chunk is allocated and faulted in ahead when three quarters of the malloc'd slabs are
// used; the next chunk is allocated ahead (spare_) when the current one starts, as address space only
// (an untouched mapping holds no memory), and once the current chunk is three quarters carved
// into slabs (kPopulateAt) the background thread (background.h) faults its pages in, so that no
// insert pays the kernel's zeroing of fresh pages. memory() counts whole chunks, and the
// one ahead only from the moment its pages were asked for.
//
// Built with CE_TUPLE_MALLOC (the sanitizer build), every tuple is its own malloc block, so that
// AddressSanitizer sees each one and reports any use after free.
//
// Not thread-safe: a space is used by one JavaScript thread.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "alloc/big_alloc.h"
#include "alloc/fault.h"
#include "tuple.h"

namespace ce {

class TupleArena {
 public:
  static constexpr size_t kSlabSize = 64 * 1024;
  static constexpr size_t kChunkSize = kHugePage;
  static constexpr size_t kSmallSlabs = kChunkSize / kSlabSize;
  static constexpr size_t kMaxSmall = 1024;
  static constexpr size_t kGrain = 8;
  static constexpr size_t kClasses = kMaxSmall / kGrain;
  // The slab of the current chunk whose carving asks for the next chunk's pages (a quarter of a
  // chunk, 8 slabs or about 13,000 tuples of 40 bytes, before it is needed).
  static constexpr size_t kPopulateAt = kChunkSize / kSlabSize * 3 / 4;
#ifdef CE_TUPLE_MALLOC
  static constexpr bool kAlwaysMalloc = true;
#else
  static constexpr bool kAlwaysMalloc = false;
#endif

  TupleArena() = default;
  TupleArena(const TupleArena&) = delete;
  TupleArena& operator=(const TupleArena&) = delete;
  ~TupleArena() { reset(); }

  // A tuple with room for `size` bytes of MessagePack; throws std::bad_alloc.
  Tuple* alloc(uint32_t size) {
    const size_t bytes = footprint(size);
    Tuple* t;
    if (kAlwaysMalloc || bytes > kMaxSmall) {
      fault::point();
      t = static_cast<Tuple*>(std::malloc(bytes));
      if (t == nullptr) throw std::bad_alloc();
      large_bytes_ += bytes;
    } else {
      t = static_cast<Tuple*>(take(bytes / kGrain - 1, bytes));
    }
    t->size = size;
    return t;
  }

  // REQUIRES: t came from this arena's alloc() and is not freed yet.
  void free(Tuple* t) {
    const size_t bytes = footprint(t->size);
    if (kAlwaysMalloc || bytes > kMaxSmall) {
      large_bytes_ -= bytes;
      std::free(t);
      return;
    }
    FreeNode* node = reinterpret_cast<FreeNode*>(t);
    Class& c = classes_[bytes / kGrain - 1];
    node->next = c.free;
    c.free = node;
  }

  // Frees every tuple at once.
  void reset() {
    for (void* slab : slabs_) std::free(slab);
    slabs_.clear();
    for (void* chunk : chunks_) big_free(chunk, kChunkSize);
    chunks_.clear();
    if (spare_ != nullptr) big_free(spare_, kChunkSize);
    spare_ = nullptr;
    spare_populated_ = false;
    chunk_next_ = chunk_end_ = nullptr;
    for (Class& c : classes_) c = Class{};
    // Large tuples are freed one by one by the owner before reset (it knows where they are).
  }

  size_t memory() const {
    return slabs_.size() * kSlabSize + (chunks_.size() + (spare_populated_ ? 1 : 0)) * kChunkSize + large_bytes_;
  }

  static size_t footprint(uint32_t size) {
    return (sizeof(Tuple) + size_t(size) + kGrain - 1) / kGrain * kGrain;
  }
  // Whether any tuple is a separate malloc block.
  bool has_large() const { return large_bytes_ > 0; }
  // Large tuples are separate malloc blocks, which reset() does not free.
  static bool is_large(const Tuple* t) { return kAlwaysMalloc || footprint(t->size) > kMaxSmall; }

 private:
  struct FreeNode { FreeNode* next; };
  struct Class {
    FreeNode* free = nullptr;
    uint8_t* bump = nullptr;
    uint8_t* bump_end = nullptr;
  };

  void* take(size_t cls, size_t bytes) {
    Class& c = classes_[cls];
    if (c.free != nullptr) {
      FreeNode* node = c.free;
      c.free = node->next;
      return node;
    }
    if (c.bump == nullptr || size_t(c.bump_end - c.bump) < bytes) {
      c.bump = new_slab();
      c.bump_end = c.bump + kSlabSize / bytes * bytes;
    }
    void* p = c.bump;
    c.bump += bytes;
    return p;
  }

  uint8_t* new_slab() {
    if (chunk_next_ == chunk_end_ && slabs_.size() >= kSmallSlabs) {
      fault::point();
      chunks_.reserve(chunks_.size() + 1);
      // This chunk is the one allocated ahead (or a new one), and the next is allocated now:
      // either allocation may throw, with nothing changed.
      // The next one is not populated yet (see kPopulateAt).
      uint8_t* chunk = spare_ != nullptr ? spare_ : static_cast<uint8_t*>(big_calloc(kChunkSize));
      uint8_t* next;
      try {
        next = static_cast<uint8_t*>(big_calloc(kChunkSize));
      } catch (...) {
        if (chunk != spare_) big_free(chunk, kChunkSize);
        throw;
      }
      spare_ = next;
      spare_populated_ = false;
      chunk_next_ = chunk;
      chunk_end_ = chunk_next_ + kChunkSize;
      chunks_.push_back(chunk_next_);
    }
    if (chunk_next_ != chunk_end_) {
      uint8_t* slab = chunk_next_;
      chunk_next_ += kSlabSize;
      if (!spare_populated_ && spare_ != nullptr && chunk_next_ == chunk_end_ - kChunkSize + kPopulateAt * kSlabSize) {
        background::populate(spare_, kChunkSize);
        spare_populated_ = true;
      }
      return slab;
    }
    if (slabs_.size() == kPopulateAt && spare_ == nullptr) {
      // The first chunk is allocated ahead as well, and asked for at once (a quarter of the
      // malloc'd slabs before it is needed). May throw, with nothing changed.
      spare_ = static_cast<uint8_t*>(big_calloc(kChunkSize, /*ahead=*/true));
      spare_populated_ = true;
    }
    fault::point();
    slabs_.reserve(slabs_.size() + 1);
    fault::point();
    void* slab = std::malloc(kSlabSize);
    if (slab == nullptr) throw std::bad_alloc();
    slabs_.push_back(slab);
    return static_cast<uint8_t*>(slab);
  }

  std::vector<void*> slabs_;   // malloc'd slabs, the first kSmallSlabs
  std::vector<void*> chunks_;  // 2 MiB chunks, each carved into slabs
  uint8_t* spare_ = nullptr;   // the next chunk, allocated ahead (address space)
  bool spare_populated_ = false;  // its pages were asked for (memory() counts it)
  uint8_t* chunk_next_ = nullptr;
  uint8_t* chunk_end_ = nullptr;
  Class classes_[kClasses];
  size_t large_bytes_ = 0;
};

}  // namespace ce
