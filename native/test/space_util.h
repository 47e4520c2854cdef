// Test helpers over a real Space: tuples {id, ttl, pad} and keys as MessagePack.
#pragma once

#include <set>
#include <string>

#include "cursor.h"
#include "space.h"
#include "test_util.h"

namespace test {

inline std::string tuple_bytes(uint64_t id, double ttl, uint32_t pad = 0) {
  Mp m;
  m.array(3).uint(id);
  if (std::trunc(ttl) == ttl && ttl >= 0) m.uint(uint64_t(ttl));
  else m.f64(ttl);
  m.str(std::string(pad, 'p'));
  return m.str();
}

inline void insert(ce::Space& s, uint64_t id, double ttl, uint32_t pad = 0) {
  const std::string b = tuple_bytes(id, ttl, pad);
  s.insert(reinterpret_cast<const uint8_t*>(b.data()), b.size(), false);
}

inline bool remove(ce::Space& s, uint64_t id) {
  const std::string k = Mp().array(1).uint(id).str();
  std::string out;
  return s.remove(reinterpret_cast<const uint8_t*>(k.data()), k.size(), &out);
}

inline uint64_t id_of(const ce::Tuple* t) {
  ce::mp::Num n{};
  ce::mp::read_num(ce::mp::field(t->data(), 0), &n);
  return n.u;
}

inline std::unique_ptr<ce::Cursor> cursor(ce::Space& s, uint32_t index, ce::IterType type, const Mp& key = Mp().array(0),
                                          bool bounded = false) {
  return s.make_cursor(index, key.data(), key.size(), type, bounded);
}

inline std::set<uint64_t> ids(ce::Space& s) {
  std::set<uint64_t> out;
  auto c = cursor(s, 0, ce::IterType::kAll);
  while (ce::Tuple* t = c->next()) out.insert(id_of(t));
  return out;
}

inline void expect_sound(ce::Space& s, const std::string& ctx) {
  const std::string why = s.check_integrity();
  expect(why.empty(), ctx, ": ", why);
}

// A space with a primary of `pk_kind` on id (field 0), and, when ttl_index, a non-unique TREE
// on ttl (field 1).
inline std::unique_ptr<ce::Space> make_space(const char* pk_kind, bool ttl_index) {
  auto s = std::make_unique<ce::Space>("test", 1 << 20);
  s->create_index("pk", pk_kind, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  if (ttl_index) s->create_index("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kNumber}});
  return s;
}

}  // namespace test
