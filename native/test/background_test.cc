// The background thread (alloc/background.h): mappings allocated ahead are faulted in without a
// byte changing under a writer, freed mappings are unmapped in order, the queue drains; a space
// truncated or destroyed at size hands its memory over and stays usable; the next arena chunk,
// node-pool chunk and hash table are allocated ahead and counted in memory().
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "alloc/background.h"
#include "alloc/big_alloc.h"
#include "alloc/node_pool.h"
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

// Pages of [p, p + len) resident now.
size_t resident_pages(void* p, size_t len) {
  std::vector<unsigned char> v(len / 4096);
  if (mincore(p, len, v.data()) != 0) return 0;
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

// A populate faults every page in (the pool build maps huge pages; the per-node build calloc's,
// where nothing is asked of the thread).
void populate_faults_pages_in() {
  const size_t len = 4 * ce::kHugePage;
  auto* p = static_cast<uint8_t*>(ce::big_calloc(len, /*ahead=*/true));
  ce::background::wait_idle();
  if (ce::big_mapped(len)) expect(resident_pages(p, len) == len / 4096, "populated: ", resident_pages(p, len));
  for (size_t k = 0; k < len; k += 4096) expect(p[k] == 0, "zeroed");
  ce::big_free(p, len);
  ce::background::wait_idle();
}

// The VmFlags line of /proc/self/smaps for the mapping that holds p ("" if none).
std::string vm_flags_of(const void* p) {
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return "";
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  char line[512];
  bool inside = false;
  std::string flags;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    if (std::sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && std::strchr(line, '-') != nullptr && line[0] != 'V') {
      inside = a >= lo && a < hi;
    } else if (inside && std::strncmp(line, "VmFlags:", 8) == 0) {
      flags = line + 8;
      break;
    }
  }
  std::fclose(f);
  return flags;
}

// Big mappings ask for 4 KiB pages (MADV_NOHUGEPAGE, VmFlags "nh") unless the environment's
// CAPPED_EXPIRATIOND_HUGE_PAGES is exactly "1" (MADV_HUGEPAGE, "hg"); run.sh runs this test both ways.
void huge_pages_follow_the_environment() {
  expect(!ce::huge_pages_wanted(nullptr) && !ce::huge_pages_wanted("") && !ce::huge_pages_wanted("0") &&
             !ce::huge_pages_wanted("10") && !ce::huge_pages_wanted("yes") && ce::huge_pages_wanted("1"),
         "only \"1\" asks for huge pages");
  const char* env = std::getenv("CAPPED_EXPIRATIOND_HUGE_PAGES");
  expect(ce::huge_pages() == ce::huge_pages_wanted(env), "huge_pages() reads the environment");
  const size_t len = 2 * ce::kHugePage;
  void* p = ce::big_calloc(len);
  if (ce::big_mapped(len)) {
    const std::string flags = vm_flags_of(p);
    const bool hg = flags.find(" hg") != std::string::npos, nh = flags.find(" nh") != std::string::npos;
    expect(ce::huge_pages() ? hg && !nh : nh && !hg, "VmFlags of a big mapping:", flags);
    std::printf("  big mappings: %s pages\n", ce::huge_pages() ? "huge" : "4 KiB");
  }
  ce::big_free(p, len);
  ce::background::wait_idle();
}

// A mapping freed (or discarded) while its populate is queued or running: the populate is
// dropped or stopped before the unmap, never run over unmapped memory (which would crash here).
void unmap_while_populating() {
  for (int round = 0; round < 20; round++) {
    std::vector<uint8_t*> blocks;
    for (int i = 0; i < 8; i++) blocks.push_back(static_cast<uint8_t*>(ce::big_calloc(8 * ce::kHugePage, true)));
    if (round % 2 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200 * round));
    for (int i = 0; i < 8; i++) {
      if (i % 3 == 0) ce::big_discard(blocks[i], 4 * ce::kHugePage);
      ce::big_free(blocks[i], 8 * ce::kHugePage);
    }
  }
  ce::background::wait_idle();
  expect(ce::background::pending() == 0, "drained after unmaps over populates");
}

// The process's resident memory, in bytes (/proc/self/statm).
size_t rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * 4096 : 0;
}

// A B+tree's reserve for a rollback (NodePool::reserve) sets whole chunks aside without writing
// them: the first reserve of a pass (k re-inserts x (h + 4) nodes, a few MiB) used to thread every
// block onto the free list, which faulted its huge pages in inside the chunk (5-8 ms each on these
// VMs). Every reserved block is still handed out, once, and writable.
void node_pool_reserve_touches_nothing() {
  ce::NodePool<512> pool;
  std::vector<void*> taken;
  for (int i = 0; i < 5000; i++) taken.push_back(pool.take());  // past the small chunks
  ce::background::wait_idle();
  const size_t blocks = 6 * ce::kHugePage / 512;
  const size_t before = rss_bytes();
  pool.reserve(pool.available() + blocks);
  const size_t after = rss_bytes();
  expect(pool.available() >= blocks, "reserved: ", pool.available());
#ifndef CE_TUPLE_MALLOC
  if (before != 0) expect(after < before + ce::kHugePage, "a reserve wrote its blocks: RSS grew by ", after - before);
#else
  (void)before;
  (void)after;
#endif
  const size_t n = pool.available();
  std::vector<void*> got;
  for (size_t i = 0; i < n; i++) {
    void* p = pool.take();
    std::memset(p, 0xab, 512);
    got.push_back(p);
  }
  std::vector<void*> all = got;
  all.insert(all.end(), taken.begin(), taken.end());
  std::sort(all.begin(), all.end());
  expect(std::adjacent_find(all.begin(), all.end()) == all.end(), "a block handed out twice");
  for (void* p : got) pool.give(p);
  for (void* p : taken) pool.give(p);
  ce::background::wait_idle();
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
  huge_pages_follow_the_environment();
  populate_while_writing();
  populate_faults_pages_in();
  unmap_while_populating();
  node_pool_reserve_touches_nothing();
  truncate_and_drop_at_size();
  std::puts("background_test: ok");
  return 0;
}
