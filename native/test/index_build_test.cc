// Index builds in steps (index_build.h): writes, transactions and rollbacks between steps are
// reflected in the new index; the primary grows (HASH) while the build walks it; a duplicate
// halfway, an allocation failure at any point, and truncate() fail the build and change nothing;
// a failure that a rolled-back write caused is undone with it; a space destroyed mid-build frees
// everything (ASan).
#include <map>
#include <string>

#include "alloc/fault.h"
#include "space_util.h"

using ce::IterType;
using test::Mp;
using test::expect;

namespace {

std::string tuple(uint64_t id, uint64_t ttl) { return Mp().array(3).uint(id).uint(ttl).str(std::to_string(id)).str(); }

void insert(ce::Space& s, uint64_t id, uint64_t ttl, bool replace = false) {
  const std::string b = tuple(id, ttl);
  s.insert(reinterpret_cast<const uint8_t*>(b.data()), b.size(), replace);
}

// The new index holds exactly the model: same size, and every id the model has is found in it
// through a walk of that index.
void expect_index_is(ce::Space& s, uint32_t id, const std::map<uint64_t, uint64_t>& model, const std::string& ctx) {
  test::expect_sound(s, ctx);
  expect(s.index(id).size() == model.size(), ctx, ": size ", s.index(id).size(), " vs ", model.size());
  std::map<uint64_t, uint64_t> seen;
  auto c = test::cursor(s, id, IterType::kAll);
  while (ce::Tuple* t = c->next()) {
    ce::mp::Num n;
    ce::mp::read_num(ce::mp::field(t->data(), 1), &n);
    seen[test::id_of(t)] = n.u;
  }
  expect(seen == model, ctx, ": contents differ");
}

int64_t run_build(ce::Space& s, size_t step = 97) {
  int64_t id;
  while ((id = s.index_build_step(step, 1000000000)) < 0) {
  }
  return id;
}

// Random writes between steps, against a model.
void writes_between_steps(const char* pk, const char* kind, bool unique, uint32_t seed) {
  test::g_seed = seed;
  test::Rng rng(seed);
  ce::Space s("build", 1 << 20);
  s.create_index("pk", pk, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  std::map<uint64_t, uint64_t> model;
  // ttl = id * 3 + 1 keeps ttl unique (for a unique index on it) across replaces that keep it
  for (uint64_t id = 0; id < 3000; id++) {
    insert(s, id, id * 3 + 1);
    model[id] = id * 3 + 1;
  }
  const ce::KeyPart part = unique && std::string(kind) == "HASH" ? ce::KeyPart{2, ce::FieldType::kString}
                                                                 : ce::KeyPart{1, ce::FieldType::kUnsigned};
  s.begin_index_build("new", kind, unique, {part});
  const std::string ctx = std::string(pk) + " primary, " + kind + (unique ? " unique" : "");
  int64_t id = -1;
  size_t steps = 0;
  while (id < 0) {
    for (int k = 0; k < 30; k++) {
      // ids up to 40000: the primary grows (a HASH primary migrates) while the walk goes on
      const uint64_t key = rng.below(40000);
      const uint32_t op = rng.below(10);
      if (op < 5) {
        if (model.count(key) == 0) {
          insert(s, key, key * 3 + 1);
          model[key] = key * 3 + 1;
        }
      } else if (op < 7) {
        test::remove(s, key);
        model.erase(key);
      } else if (op < 8) {
        if (model.count(key)) insert(s, key, key * 3 + 1, /*replace=*/true);
      } else {
        // a transaction: delete a few, insert a few, then commit or roll back
        std::map<uint64_t, uint64_t> copy = model;
        const size_t sp = s.begin();
        for (int j = 0; j < 4; j++) {
          const uint64_t a = rng.below(40000);
          if (copy.count(a)) {
            test::remove(s, a);
            copy.erase(a);
          } else {
            insert(s, a, a * 3 + 1);
            copy[a] = a * 3 + 1;
          }
        }
        if (op == 8) {
          s.commit(sp);
          model = copy;
        } else {
          s.rollback(sp);
        }
      }
    }
    expect(s.index_count() == 1, ctx, ": the index is visible before it is built");
    id = s.index_build_step(97, 1000000000);
    steps++;
  }
  expect(id == 1 && s.index_count() == 2 && !s.index_building(), ctx, ": not added");
  expect(steps > 20, ctx, ": only ", steps, " steps");
  expect(s.index(1).size() == model.size(), ctx, ": new index size ", s.index(1).size(), " vs ", model.size());
  if (part.fieldno == 1) expect_index_is(s, 1, model, ctx);
  test::expect_sound(s, ctx);
}

void duplicate_halfway(const char* kind) {
  ce::Space s("dup", 1 << 20);
  s.create_index("pk", "TREE", true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  for (uint64_t id = 0; id < 2000; id++) insert(s, id, id == 1500 ? 7 : id);
  const size_t before = s.index_memory();
  s.begin_index_build("ttl", kind, true, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  size_t steps = 0;
  test::expect_error(ce::err::kDuplicateKey, [&] {
    for (;; steps++) s.index_build_step(50, 1000000000);
  }, std::string(kind) + ": duplicate halfway");
  expect(steps >= 1500 / 50 - 1, kind, ": failed after ", steps, " steps, not halfway");
  expect(!s.index_building() && s.index_count() == 1 && s.index_memory() == before, kind, ": not discarded");
  test::expect_sound(s, kind);
}

void allocation_failure(const char* kind) {
  size_t n = 0;
  for (;; n++) {
    ce::Space s("fault", 1 << 20);
    s.create_index("pk", "HASH", true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
    for (uint64_t id = 0; id < 3000; id++) insert(s, id, id);
    s.begin_index_build("ttl", kind, std::string(kind) == "HASH", {ce::KeyPart{1, ce::FieldType::kUnsigned}});
    s.index_build_step(100, 1000000000);
    const size_t before = s.index_count();
    ce::fault::arm(int64_t(n));
    bool failed = false;
    try {
      run_build(s, 100);
    } catch (const std::bad_alloc&) {
      failed = true;
    }
    const bool fired = ce::fault::disarm();
    expect(failed == fired, kind, ": n=", n, " failed ", failed, " fired ", fired);
    if (!failed) {
      expect(s.index_count() == 2 && s.index(1).size() == 3000, kind, ": built");
      break;
    }
    expect(!s.index_building() && s.index_count() == before, kind, ": n=", n, ": not discarded");
    test::expect_sound(s, kind);
  }
  expect(n > 0, kind, ": no allocation failed");
}

void truncate_and_destroy() {
  ce::Space s("trunc", 1 << 20);
  s.create_index("pk", "HASH", true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  for (uint64_t id = 0; id < 1000; id++) insert(s, id, id);
  s.begin_index_build("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  s.index_build_step(100, 1000000000);
  test::expect_error(ce::err::kUnsupported, [&] {
    s.create_index("other", "TREE", false, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  }, "createIndex during a build");
  test::expect_error(ce::err::kUnsupported, [&] {
    s.begin_index_build("other", "TREE", false, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  }, "a second build");
  s.truncate();
  test::expect_error(ce::err::kIndexBuildAborted, [&] { s.index_build_step(100, 1000000000); }, "truncated");
  expect(!s.index_building() && s.index_count() == 1, "truncate: not discarded");
  insert(s, 1, 1);
  s.begin_index_build("ttl", "TREE", false, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  expect(run_build(s) == 1, "rebuilt");

  // destroyed mid-build (ASan checks that the build, its cursor and its index are freed)
  auto d = std::make_unique<ce::Space>("destroy", 1 << 20);
  d->create_index("pk", "TREE", true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
  for (uint64_t id = 0; id < 1000; id++) insert(*d, id, id);
  d->begin_index_build("ttl", "HASH", true, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
  d->index_build_step(100, 1000000000);
  d.reset();
}

// A duplicate written inside a transaction fails the build only if the transaction commits: a
// rollback that undoes it (the whole transaction, or the nested one that wrote it) makes the
// build start over, whether or not the walk had passed the key it duplicated.
void rolled_back_failure(const char* pk, const char* kind) {
  const std::string ctx = std::string(pk) + "/" + kind;
  auto fresh = [&](std::map<uint64_t, uint64_t>& model) {
    auto s = std::make_unique<ce::Space>("rb", 1 << 20);
    s->create_index("pk", pk, true, {ce::KeyPart{0, ce::FieldType::kUnsigned}});
    for (uint64_t id = 0; id < 2000; id++) {
      insert(*s, id, id);
      model[id] = id;
    }
    s->begin_index_build("ttl", kind, true, {ce::KeyPart{1, ce::FieldType::kUnsigned}});
    s->index_build_step(300, 1000000000);
    return s;
  };
  for (const uint64_t dup : {uint64_t(5), uint64_t(1990)}) {  // a key the walk passed, or not yet (TREE pk)
    std::map<uint64_t, uint64_t> model;
    auto s = fresh(model);
    const size_t sp = s->begin();
    insert(*s, 9000, dup);
    s->rollback(sp);
    expect(run_build(*s) == 1, ctx, ": dup ", dup, ": rolled back, yet the build failed");
    expect_index_is(*s, 1, model, ctx + ": rolled back");
  }
  {  // nested: the inner transaction wrote the duplicate and rolls back, the outer one commits
    std::map<uint64_t, uint64_t> model;
    auto s = fresh(model);
    const size_t outer = s->begin();
    insert(*s, 9001, 100000);
    model[9001] = 100000;
    const size_t inner = s->begin();
    insert(*s, 9002, 7);
    s->rollback(inner);
    insert(*s, 9003, 100001);
    model[9003] = 100001;
    s->commit(outer);
    expect(run_build(*s) == 1, ctx, ": nested rollback, yet the build failed");
    expect_index_is(*s, 1, model, ctx + ": nested");
  }
  {  // committed: the failure stands
    std::map<uint64_t, uint64_t> model;
    auto s = fresh(model);
    const size_t sp = s->begin();
    insert(*s, 9004, 9);
    s->commit(sp);
    test::expect_error(ce::err::kDuplicateKey, [&] { run_build(*s); }, ctx + ": committed duplicate");
    expect(!s->index_building() && s->index_count() == 1, ctx, ": not discarded");
    test::expect_sound(*s, ctx);
  }
  {  // a truncate inside the transaction fails the build for good, even when it rolls back
    std::map<uint64_t, uint64_t> model;
    auto s = fresh(model);
    const size_t sp = s->begin();
    insert(*s, 9005, 11);
    s->truncate();
    s->rollback(sp);
    test::expect_error(ce::err::kIndexBuildAborted, [&] { run_build(*s); }, ctx + ": truncate");
    test::expect_sound(*s, ctx);
  }
}

}  // namespace

int main() {
  uint32_t seed = 20261123;
  for (const char* pk : {"HASH", "TREE"}) {
    writes_between_steps(pk, "TREE", false, seed++);
    writes_between_steps(pk, "TREE", true, seed++);
    writes_between_steps(pk, "HASH", true, seed++);
  }
  duplicate_halfway("TREE");
  duplicate_halfway("HASH");
  allocation_failure("TREE");
  allocation_failure("HASH");
  truncate_and_destroy();
  for (const char* pk : {"HASH", "TREE"})
    for (const char* kind : {"TREE", "HASH"}) rolled_back_failure(pk, kind);
  std::puts("index_build_test: ok");
  return 0;
}
