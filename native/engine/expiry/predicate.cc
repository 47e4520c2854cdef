// The predicate strategy's two halves (see chunk.h): scan and copy, then delete what a
// JavaScript isExpired chose, where the stored tuple is still the one visited.
#include <cstring>

#include "errors.h"
#include "expiry/chunk.h"

namespace ce {

uint32_t scan_visited(Cursor& cursor, uint32_t scan_size, Visited* visited, bool* pass_end) {
  visited->bytes.clear();
  visited->offsets.clear();
  visited->offsets.push_back(0);
  *pass_end = false;
  uint32_t n = 0;
  while (n < scan_size) {
    Tuple* t = cursor.next();
    if (t == nullptr) {
      *pass_end = true;
      cursor.reset();
      return n;
    }
    visited->bytes.append(reinterpret_cast<const char*>(t->data()), t->size);
    visited->offsets.push_back(visited->bytes.size());
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

uint32_t delete_visited(Space& space, const Visited& visited, const uint32_t* positions, size_t count,
                        std::string* deleted) {
  const std::vector<size_t>& offsets = visited.offsets;
  Index& pk = space.primary();
  std::vector<uint64_t> probe;
  uint32_t removed = 0;
  for (size_t i = 0; i < count; i++) {
    const uint32_t pos = positions[i];
    if (size_t(pos) + 1 >= offsets.size())
      throw DbError(err::kIllegalParams, "delete_visited(): position " + std::to_string(pos) + " was not visited");
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(visited.bytes.data()) + offsets[pos];
    const size_t size = offsets[pos + 1] - offsets[pos];
    probe.assign((sizeof(Tuple) + size + 7) / 8, 0);
    Tuple* copy = reinterpret_cast<Tuple*>(probe.data());
    copy->size = uint32_t(size);
    std::memcpy(copy->data(), bytes, size);
    Tuple* stored = pk.find_dup(copy);
    if (stored == nullptr || !stored->same_bytes(bytes, size)) continue;
    if (deleted != nullptr) deleted->append(reinterpret_cast<const char*>(bytes), size);
    space.remove_tuple(stored, pk.prepare(stored->data()));
    removed++;
  }
  return removed;
}

}  // namespace ce
