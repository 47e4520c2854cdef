#include "expiry/chunk.h"

#include <algorithm>
#include <cmath>

#include "errors.h"
#include "msgpack.h"

namespace ce {

ChunkResult expire_chunk(Space& space, Cursor& cursor, uint32_t fieldno, uint32_t scan_size, double now,
                         bool early_break, std::string* deleted) {
  ChunkResult r;
  mp::Num limit;
  limit.kind = mp::Num::kDouble;
  limit.d = now;
  // Batches of tuples from the cursor: read every TTL first (prefetching the hash slots of the
  // expired ones), then delete. Tuples sit in slabs in insertion order, not in index order, so
  // this lets their cache misses overlap instead of queueing one by one; the cursor prefetches
  // tuples further ahead as it walks. Small batches keep that steady: with 64, a burst of
  // prefetches overran the CPU's miss buffers and the pure HASH scan took 45 ms instead of 35.
  constexpr uint32_t kBatch = 16;
  Tuple* batch[kBatch];
  bool expired[kBatch];
  uint64_t hash[kBatch];
  while (r.checked < scan_size) {
    const uint32_t want = std::min(kBatch, scan_size - r.checked);
    const uint32_t n = cursor.next_batch(batch, want);
    uint32_t stop = n;
    bool broke = false;
    for (uint32_t i = 0; i < n; i++) {
      expired[i] = false;
      const uint8_t* ttl = mp::field(batch[i]->data(), fieldno);
      mp::Num value;
      if (ttl == nullptr || !mp::read_num(ttl, &value)) continue;
      if (value.kind == mp::Num::kDouble && std::isnan(value.d)) continue;  // NaN <= now is false
      if (mp::compare_num(value, limit) <= 0) {
        expired[i] = true;
        hash[i] = space.prefetch_remove(batch[i]);
      } else if (early_break) {
        stop = i + 1;
        broke = true;
        break;
      }
    }
    for (uint32_t i = 0; i < stop; i++) {
      if (!expired[i]) continue;
      if (deleted != nullptr) deleted->append(reinterpret_cast<const char*>(batch[i]->data()), batch[i]->size);
      space.remove_tuple(batch[i], hash[i]);
      r.expired++;
    }
    r.checked += stop;
    if (broke || n < want) {
      r.pass_end = true;
      r.early_break = broke;
      cursor.reset();
      return r;
    }
  }
  if (cursor.at_end()) {
    r.pass_end = true;
    cursor.reset();
    return r;
  }
  cursor.detach();
  return r;
}

uint32_t scan_chunk(Cursor& cursor, uint32_t scan_size, bool* pass_end) {
  std::string& visited = cursor.visited();
  std::vector<size_t>& offsets = cursor.visited_offsets();
  visited.clear();
  offsets.clear();
  offsets.push_back(0);
  *pass_end = false;
  uint32_t n = 0;
  while (n < scan_size) {
    Tuple* t = cursor.next();
    if (t == nullptr) {
      *pass_end = true;
      cursor.reset();
      return n;
    }
    visited.append(reinterpret_cast<const char*>(t->data()), t->size);
    offsets.push_back(visited.size());
    n++;
  }
  if (cursor.at_end()) {
    *pass_end = true;
    cursor.reset();
    return n;
  }
  cursor.detach();
  return n;
}

uint32_t delete_visited(Space& space, Cursor& cursor, const uint32_t* positions, size_t count,
                        std::string* deleted) {
  const std::string& visited = cursor.visited();
  const std::vector<size_t>& offsets = cursor.visited_offsets();
  Index& pk = space.primary();
  std::vector<uint64_t> probe;
  uint32_t removed = 0;
  for (size_t i = 0; i < count; i++) {
    const uint32_t pos = positions[i];
    if (size_t(pos) + 1 >= offsets.size())
      throw DbError(err::kIllegalParams, "delete_visited(): position " + std::to_string(pos) + " was not visited");
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(visited.data()) + offsets[pos];
    const size_t size = offsets[pos + 1] - offsets[pos];
    probe.assign((sizeof(Tuple) + size + 7) / 8, 0);
    Tuple* copy = reinterpret_cast<Tuple*>(probe.data());
    copy->size = uint32_t(size);
    std::memcpy(copy->data(), bytes, size);
    Tuple* stored = pk.find_dup(copy);
    if (stored == nullptr || !stored->same_bytes(bytes, size)) continue;
    if (deleted != nullptr) deleted->append(reinterpret_cast<const char*>(bytes), size);
    space.remove_tuple(stored, space.pk_hash(stored->data()));
    removed++;
  }
  return removed;
}

}  // namespace ce
