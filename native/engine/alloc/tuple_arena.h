// TupleArena: the allocator that owns every tuple of one space.
//
// A tuple costs its 4-byte header plus its MessagePack, rounded up to 8 bytes. malloc would
// round the same request up to 16 bytes and add 8 bytes of its own header, which is a third of
// a typical 40-byte session tuple. So, as Tarantool's `small` allocator does, tuples up to
// kMaxSmall bytes are carved out of 64 KiB slabs in size classes 8 bytes apart. Larger tuples go
// to malloc.
//
// Slabs are 64 KiB-aligned, and each begins with a header (Slab): its class, its count of live
// tuples and its own free list, threaded through its freed tuples. A tuple finds its slab by
// masking its address. Each class keeps a list of its slabs that have room (a free tuple, or
// space never carved); it allocates from the first, and a slab that fills leaves the list. A
// freed tuple's slab goes back to the end of the list if it had left it, so new tuples fill the
// slabs already in use before the older, emptying ones. A slab whose last tuple is freed goes to
// the arena's pool of empty slabs, which any class takes from before carving a new slab, unless
// it is the only slab its class has room in (an insert and delete in turn would otherwise move a
// slab to the pool and back each time): then it stays, on the list of idle slabs, which a class
// takes from when the pool is empty (128 classes could otherwise keep 8 MiB of empty slabs
// between them). So the memory freed in one size class serves the
// others: a workload whose tuple sizes drift (sessions that grow by update()) holds about its peak
// of live tuples, where per-class free lists held every class's own peak (50 rounds of 1 MB, each
// 8 bytes longer than the last, kept 54 MB).
//
// Costs: allocation and free are O(1); each touches the tuple and its slab's header (one cache
// line, shared by the slab's ~1,300 session tuples). Slabs are kept until the arena is reset
// (truncate) or destroyed, in their class or in the pool, so after a mass expiry the memory is
// reused by later inserts rather than returned to the system; memory() counts whole slabs, free
// or not.
//
// The first kSmallSlabs slabs are malloc blocks (aligned_alloc), so a small space costs little.
// After that, slabs are carved from 2 MiB chunks (big_alloc.h: 4 KiB pages by default, huge
// pages when the environment asks; with them a random read of one tuple among millions costs a
// cache miss but not also a TLB miss).
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
    Slab* s = slab_of(t);
    FreeNode* node = reinterpret_cast<FreeNode*>(t);
    node->next = s->free;
    s->free = node;
    s->live--;
    Class& c = classes_[s->cls];
    if (!s->listed) link(c, s);  // it was full: it has room again
    if (s->live != 0) return;
    if (c.head != s || s->next != nullptr) {
      unlink(c, s);
      s->next = pool_;
      pool_ = s;
    } else {
      idle_link(s);
    }
  }

  // Loads the header of t's slab, which free(t) will write: a caller freeing many tuples in an
  // order unrelated to their slabs (a commit of random deletes) loads a batch's headers first,
  // so that their cache misses overlap (a plain load: prefetches do not take on these VMs).
  static void touch_slab(const Tuple* t) {
    if (kAlwaysMalloc || footprint(t->size) > kMaxSmall) return;
    static_cast<void>(*static_cast<const volatile uint32_t*>(&slab_of(t)->live));
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
    chunk_carved_ = 0;
    pool_ = nullptr;
    idle_ = nullptr;
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
  // At the start of every slab.
  struct Slab {
    FreeNode* free;  // its freed tuples
    Slab* prev;      // in its class's list of slabs with room, or (next) in the pool
    Slab* next;
    uint8_t* bump;   // the next tuple never carved
    uint8_t* end;    // the end of the last whole tuple
    Slab* idle_prev;  // on the idle list: empty, and the only slab with room of its class
    Slab* idle_next;
    uint32_t live;
    uint16_t cls;
    bool listed;     // in its class's list
    bool idle;
  };
  static constexpr size_t kHeader = (sizeof(Slab) + kGrain - 1) / kGrain * kGrain;
  static_assert((kSlabSize & (kSlabSize - 1)) == 0, "slabs are found by masking an address");
  struct Class {
    Slab* head = nullptr;  // slabs with room, the one allocated from first
    Slab* tail = nullptr;
  };

  static Slab* slab_of(const Tuple* t) {
    return reinterpret_cast<Slab*>(reinterpret_cast<uintptr_t>(t) & ~uintptr_t(kSlabSize - 1));
  }
  static void link(Class& c, Slab* s) {
    s->prev = c.tail;
    s->next = nullptr;
    if (c.tail != nullptr) c.tail->next = s;
    else c.head = s;
    c.tail = s;
    s->listed = true;
  }
  static void unlink(Class& c, Slab* s) {
    if (s->prev != nullptr) s->prev->next = s->next;
    else c.head = s->next;
    if (s->next != nullptr) s->next->prev = s->prev;
    else c.tail = s->prev;
    s->prev = s->next = nullptr;
    s->listed = false;
  }

  void idle_link(Slab* s) {
    s->idle_prev = nullptr;
    s->idle_next = idle_;
    if (idle_ != nullptr) idle_->idle_prev = s;
    idle_ = s;
    s->idle = true;
  }
  void idle_unlink(Slab* s) {
    if (s->idle_prev != nullptr) s->idle_prev->idle_next = s->idle_next;
    else idle_ = s->idle_next;
    if (s->idle_next != nullptr) s->idle_next->idle_prev = s->idle_prev;
    s->idle = false;
  }

  void* take(size_t cls, size_t bytes) {
    Class& c = classes_[cls];
    for (Slab* s = c.head; s != nullptr; s = c.head) {
      if (s->free == nullptr && s->bump == s->end) {
        unlink(c, s);  // full
        continue;
      }
      if (s->live++ == 0 && s->idle) idle_unlink(s);
      if (s->free != nullptr) {
        FreeNode* node = s->free;
        s->free = node->next;
        return node;
      }
      void* p = s->bump;
      s->bump += bytes;
      return p;
    }
    Slab* s = pool_;
    if (s != nullptr) {
      pool_ = s->next;
    } else if (idle_ != nullptr) {
      s = idle_;  // another class's empty slab
      idle_unlink(s);
      unlink(classes_[s->cls], s);
    } else {
      s = reinterpret_cast<Slab*>(new_slab());  // may throw, with nothing changed
    }
    s->idle = false;
    uint8_t* first = reinterpret_cast<uint8_t*>(s) + kHeader;
    s->free = nullptr;
    s->bump = first + bytes;
    s->end = first + (kSlabSize - kHeader) / bytes * bytes;
    s->live = 1;
    s->cls = uint16_t(cls);
    link(c, s);
    return first;
  }

  // A 64 KiB-aligned slab; throws std::bad_alloc with nothing changed.
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
      chunks_.push_back(chunk);
      // big_calloc maps 2 MiB-aligned chunks; a calloc'd one (without mmap) loses its ends.
      const uintptr_t start = reinterpret_cast<uintptr_t>(chunk);
      chunk_next_ = reinterpret_cast<uint8_t*>((start + kSlabSize - 1) & ~uintptr_t(kSlabSize - 1));
      chunk_end_ = reinterpret_cast<uint8_t*>((start + kChunkSize) & ~uintptr_t(kSlabSize - 1));
      chunk_carved_ = 0;
    }
    if (chunk_next_ != chunk_end_) {
      uint8_t* slab = chunk_next_;
      chunk_next_ += kSlabSize;
      if (++chunk_carved_ == kPopulateAt && !spare_populated_ && spare_ != nullptr) {
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
    void* slab = std::aligned_alloc(kSlabSize, kSlabSize);
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
  size_t chunk_carved_ = 0;    // slabs carved from the current chunk
  Slab* pool_ = nullptr;       // empty slabs, for any class
  Slab* idle_ = nullptr;       // empty slabs kept by their class, taken when the pool is empty
  Class classes_[kClasses];
  size_t large_bytes_ = 0;
};

}  // namespace ce
