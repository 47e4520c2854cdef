// The background thread (alloc/background.h): mappings allocated ahead are faulted in without a
// byte changing under a writer, freed mappings are unmapped in order, the queue drains; a space
// truncated or destroyed at size hands its memory over and stays usable; the next arena chunk,
// node-pool chunk and hash table are allocated ahead and counted in memory().
#include <cstring>
#include <string>
#include <vector>

#include "alloc/background.h"
#include "alloc/big_alloc.h"
#include "space_util.h"

using test::Mp;
using test::expect;

namespace {

void populate_while_writing() {
  std::vector<uint8_t*> blocks;
  for (int i = 0; i < 16; i++) {
    auto* p = static_cast<uint8_t*>(ce::big_calloc(3 * ce::kHugePage, /*ahead=*/true));
    for (size_t k = 0; k < 3 * ce::kHugePage; k += 4096) p[k] = uint8_t(k / 4096 + i);  // races the populate
    blocks.push_back(p);
  }
  ce::background::wait_idle();
  expect(ce::background::pending() == 0, "queue drained");
  for (int i = 0; i < 16; i++) {
    for (size_t k = 0; k < 3 * ce::kHugePage; k += 4096)
      expect(blocks[i][k] == uint8_t(k / 4096 + i), "a populate changed a byte");
    expect(blocks[i][1] == 0, "not zeroed");
    ce::big_free(blocks[i], 3 * ce::kHugePage);
  }
  ce::background::wait_idle();
  expect(ce::background::pending() == 0, "unmaps drained");
}

std::string tuple(uint64_t id) { return Mp().array(3).uint(id).str("user" + std::to_string(id) + "@tarantool.io").uint(id % 3600).str(); }

void fill(ce::Space& s, uint64_t from, uint64_t n) {
  for (uint64_t id = from; id < from + n; id++) {
    const std::string b = tuple(id);
    s.insert(reinterpret_cast<const uint8_t*>(b.data()), b.size(), false);
  }
}

void truncate_and_drop_at_size() {
  auto s = std::make_unique<ce::Space>("bg", 1 << 20);
  s->create_index("pk", "HASH", true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  s->create_index("exp", "TREE", false, {ce::KeyPart{2, ce::FieldType::kUnsigned}});
  fill(*s, 0, 300000);
  test::expect_sound(*s, "loaded");
  const size_t loaded = s->tuple_memory() + s->index_memory();
  s->truncate();
  expect(s->len() == 0 && s->tuple_memory() == 0, "truncate frees the tuples at once");
  expect(s->index_memory() < loaded / 100, "truncate frees the indexes at once: ", s->index_memory());
  test::expect_sound(*s, "truncated");
  fill(*s, 1000000, 300000);  // the memory handed over is never reused by mistake
  test::expect_sound(*s, "refilled");
  expect(s->len() == 300000, "refilled");
  s.reset();
  ce::background::wait_idle();
  expect(ce::background::pending() == 0, "drained after drop");
}

}  // namespace

int main() {
  populate_while_writing();
  truncate_and_drop_at_size();
  std::puts("background_test: ok");
  return 0;
}
