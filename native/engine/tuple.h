// A stored tuple: a 4-byte length followed by the MessagePack array, validated on the way in.
//
// Tuples are immutable once stored and owned by the TupleArena of their space: indexes, the
// undo log and cursors hold plain pointers and never free them. A tuple is freed when the
// statement that removed it is committed (or, for a tuple inserted by a statement that is rolled
// back, when it is undone), so a pointer stays valid for as long as a transaction can reach it.
#pragma once

#include <cstdint>
#include <cstring>

namespace ce {

struct Tuple {
  uint32_t size;  // bytes of MessagePack that follow the header

  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(this + 1); }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(this + 1); }
  bool same_bytes(const uint8_t* bytes, size_t n) const {
    return n == size && std::memcmp(data(), bytes, n) == 0;
  }
};

static_assert(sizeof(Tuple) == 4, "the tuple header is 4 bytes");

}  // namespace ce
