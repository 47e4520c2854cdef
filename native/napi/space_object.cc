#include "space_object.h"

#include <algorithm>

#include "cursor_object.h"
#include "expiry/chunk.h"
#include "msgpack.h"

namespace ce {

namespace {

// A key argument: undefined/null (no parts), a number, string or boolean (one part), or a
// Buffer holding a packed array. Scalars are encoded here so the hot `get(id)` path packs
// nothing in JavaScript. A Buffer's bytes are copied: the engine reads the key after checking
// it, and a Buffer over a SharedArrayBuffer can change in between.
struct KeyArg {
  std::string bytes;
  const uint8_t* data() const { return reinterpret_cast<const uint8_t*>(bytes.data()); }
  size_t size() const { return bytes.size(); }
};

KeyArg key_arg(const Args& args, size_t i) {
  KeyArg k;
  double d;
  if (i < args.length() && napi_get_value_double(args.env(), args[i], &d) == napi_ok) {  // the common case first
    uint8_t b[10];
    b[0] = 0x91;
    k.bytes.assign(reinterpret_cast<const char*>(b), 1 + mp::write_double(b + 1, d));  // fits the string's own buffer
    return k;
  }
  switch (args.type(i)) {
    case napi_undefined:
    case napi_null:
      k.bytes.push_back(char(0x90));
      break;
    case napi_boolean:
      mp::write_array_header(&k.bytes, 1);
      mp::write_bool(&k.bytes, args.boolean(i, "key"));
      break;
    case napi_string: {
      const std::string s = Args::string_value(args.env(), args[i], "key");
      mp::write_array_header(&k.bytes, 1);
      mp::write_str(&k.bytes, s.data(), s.size());
      break;
    }
    default: {
      const uint8_t* data;
      size_t size;
      if (!args.bytes_if(i, &data, &size))
        throw DbError(err::kKeyType, "Key must be a number, string, boolean, array of parts, or undefined");
      k.bytes.assign(reinterpret_cast<const char*>(data), size);
      break;
    }
  }
  return k;
}

IterType iter_arg(const Args& args, size_t i) {
  const uint32_t v = args.u32(i, "iterator");
  if (v > uint32_t(IterType::kLt)) throw DbError(err::kIteratorType, "Unknown iterator type #" + std::to_string(v));
  return IterType(v);
}

constexpr const char* kOut5 = "a Float64Array of at least 5 elements";

// createIndex's parts: the two arrays, read element by element (a getter may run here).
std::vector<KeyPart> parts_arg(const Args& args, size_t i) {
  napi_env env = args.env();
  bool fields_array = false, types_array = false;
  if (args.length() < i + 2 || napi_is_array(env, args[i], &fields_array) != napi_ok ||
      napi_is_array(env, args[i + 1], &types_array) != napi_ok || !fields_array || !types_array)
    throw bad_arg("parts", "two arrays");
  uint32_t n = 0, m = 0;
  check(napi_get_array_length(env, args[i], &n));
  check(napi_get_array_length(env, args[i + 1], &m));
  if (n != m || n == 0 || n > 64) throw bad_arg("parts", "1 to 64 fields with one type each");
  std::vector<KeyPart> parts;
  for (uint32_t k = 0; k < n; k++) {
    napi_value f, t;
    check(napi_get_element(env, args[i], k, &f));
    check(napi_get_element(env, args[i + 1], k, &t));
    double fd;
    napi_valuetype tt;
    const napi_status fs = napi_get_value_double(env, f, &fd);
    check(napi_typeof(env, t, &tt));
    if (fs == napi_number_expected || tt != napi_string) throw bad_arg("parts", "numbers and type names");
    check(fs);
    if (!(fd >= 0 && fd < 65536) || std::trunc(fd) != fd) throw bad_arg("field", "an integer in [0, 65536)");
    const std::string name = Args::string_value(env, t, "parts");
    FieldType ft;
    if (!parse_field_type(name, &ft)) throw DbError(err::kIllegalParams, "Unknown field type '" + name + "'");
    parts.push_back(KeyPart{uint32_t(fd), ft});
  }
  return parts;
}

}  // namespace

Now now_arg(const Args& args, size_t i) {
  double d;
  if (i >= args.length()) return Now();
  if (napi_get_value_double(args.env(), args[i], &d) == napi_ok) return Now(d);
  if (args.is_undefined(i)) return Now();
  throw bad_arg("now", "a number or undefined");
}

template <napi_value (SpaceObject::*Method)(const Args&), bool kChangesMemory>
napi_value SpaceObject::call(napi_env env, napi_callback_info info) {
  SpaceObject* self = nullptr;
  napi_value result = guard(env, [&]() -> napi_value {
    const Args args(env, info, 1);
    void* ptr = nullptr;
    AddonData* data = args.data();
    if (napi_get_value_external(env, args.raw(0), &ptr) != napi_ok ||
        ptr == nullptr ||
        (ptr != data->last_space && data->spaces.count(static_cast<SpaceObject*>(ptr)) == 0))
      throw bad_arg("space", "a space handle made by createSpace()");
    self = static_cast<SpaceObject*>(ptr);  // the argument keeps it alive during the call
    data->last_space = self;
    return (self->*Method)(args);
  });
  if (kChangesMemory && self != nullptr) self->report_memory(env);
  return result;
}

void SpaceObject::report_memory(napi_env env) {
  const int64_t held = space_ ? int64_t(space_->tuple_memory() + space_->index_memory()) : 0;
  const int64_t now = std::min(held, kReportCap);
  const int64_t delta = now - reported_;
  if (delta == 0 || (now != 0 && delta > -kReportStep && delta < kReportStep)) return;
  int64_t total = 0;
  if (napi_adjust_external_memory(env, delta, &total) == napi_ok) reported_ = now;
}

void SpaceObject::register_functions(napi_env env, napi_value exports, AddonData* d) {
  const napi_property_descriptor fns[] = {
      method("createIndex", call<&SpaceObject::create_index, true>, d),
      method("buildIndexBegin", call<&SpaceObject::build_index_begin, true>, d),
      method("buildIndexStep", call<&SpaceObject::build_index_step, true>, d),
      method("insert", call<&SpaceObject::insert, true>, d),
      method("insertMany", call<&SpaceObject::insert_many, true>, d),
      method("get", call<&SpaceObject::get>, d),
      method("delete", call<&SpaceObject::remove, true>, d),
      method("select", call<&SpaceObject::select>, d),
      method("count", call<&SpaceObject::count>, d),
      method("minmax", call<&SpaceObject::minmax>, d),
      method("len", call<&SpaceObject::len>, d),
      method("memory", call<&SpaceObject::memory>, d),
      method("truncate", call<&SpaceObject::truncate, true>, d),
      method("drop", call<&SpaceObject::drop, true>, d),
      method("begin", call<&SpaceObject::begin>, d),
      method("commit", call<&SpaceObject::commit, true>, d),
      method("rollback", call<&SpaceObject::rollback, true>, d),
      method("cursor", call<&SpaceObject::cursor>, d),
      method("expireChunk", call<&SpaceObject::expire_chunk, true>, d),
      method("rollbackChunk", call<&SpaceObject::rollback_chunk, true>, d),
      method("scanChunk", call<&SpaceObject::scan_chunk>, d),
      method("deleteVisited", call<&SpaceObject::delete_visited, true>, d),
      method("checkIntegrity", call<&SpaceObject::check_integrity>, d),
      method("update", call<&SpaceObject::update, true>, d),
      method("updateNumber", call<&SpaceObject::update_number, true>, d),
      method("upsert", call<&SpaceObject::upsert, true>, d),
      method("bsize", call<&SpaceObject::bsize>, d),
      method("takeEvicted", call<&SpaceObject::take_evicted>, d),
  };
  napi_value space;
  check(napi_create_object(env, &space));
  check(napi_define_properties(env, space, sizeof fns / sizeof fns[0], fns));
  const napi_property_descriptor exported[] = {
      method("createSpace", create_space, d),
      {"space", nullptr, nullptr, nullptr, nullptr, space, napi_default_jsproperty, nullptr},
  };
  check(napi_define_properties(env, exports, 2, exported));
}

// createSpace(name, maxTupleSize, ttlField?, maxTuples?, maxBytes?, evict?, wallClock?): a new
// space's handle; ttlField is 0-based; maxTuples/maxBytes: positive integers or Infinity (no cap);
// evict: onFull 'evictExpiring' (see Space for what the engine refuses); wallClock (with a
// ttlField only): the reads' default clock is the wall clock, in seconds when true and in
// milliseconds when false (see read_now).
napi_value SpaceObject::create_space(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    const std::string name = args.string(0, "name");
    const uint32_t max = args.u32(1, "maxTupleSize");
    if (max == 0) throw bad_arg("maxTupleSize", "positive");
    uint32_t ttl_field = kNoTtlField;
    if (args.length() > 2 && !args.is_undefined(2)) {
      ttl_field = args.u32(2, "ttlField");
      if (ttl_field >= 65535) throw bad_arg("ttlField", "an integer in [0, 65535)");
    }
    SpaceCaps caps;
    if (args.length() > 3 && !args.is_undefined(3)) caps.max_tuples = args.count(3, "maxTuples");
    if (args.length() > 4 && !args.is_undefined(4)) caps.max_bytes = args.count(4, "maxBytes");
    if (args.length() > 5 && !args.is_undefined(5)) caps.evict = args.boolean(5, "evict");
    WallClockUnit wall;
    const bool has_wall = args.length() > 6 && !args.is_undefined(6);
    if (has_wall) {
      wall = args.boolean(6, "wallClock") ? WallClockUnit::kSeconds : WallClockUnit::kMillis;
      if (ttl_field == kNoTtlField) throw bad_arg("wallClock", "given only with a ttlField");
    }
    AddonData* data = args.data();
    auto self = std::make_unique<SpaceObject>(name, max, ttl_field, caps, has_wall ? &wall : nullptr);
    napi_value ext;
    data->holders++;
    const napi_status made = napi_create_external(env, self.get(), finalize, data, &ext);
    if (made != napi_ok) {
      data->holders--;
      throw NapiFailure{made};
    }
    data->spaces.insert(self.release());  // if this throws, the handle is refused and finalized
    return ext;
  });
}

void SpaceObject::finalize(napi_env env, void* ptr, void* hint) {
  SpaceObject* self = static_cast<SpaceObject*>(ptr);
  AddonData* data = static_cast<AddonData*>(hint);
  data->spaces.erase(self);
  if (data->last_space == self) data->last_space = nullptr;
  self->space_.reset();
  self->report_memory(env);
  delete self;
  release(data);
}

SpaceObject::SpaceObject(std::string name, uint32_t max_tuple_size, uint32_t ttl_fieldno, SpaceCaps caps,
                         const WallClockUnit* wall)
    : space_(std::make_unique<Space>(name, max_tuple_size, ttl_fieldno, caps)),
      name_(std::move(name)),
      has_wall_(wall != nullptr),
      wall_(wall != nullptr ? *wall : WallClockUnit::kMillis) {}

Space& SpaceObject::space() {
  if (!space_) throw DbError(err::kSpaceDropped, "Space '" + name_ + "' was dropped");
  return *space_;
}

// createIndex(name, type, unique, fields, types)
napi_value SpaceObject::create_index(const Args& args) {
  Deferred later;
  const std::string name = later([&] { return args.string(0, "name"); });
  const std::string type = later([&] { return args.string(1, "type"); });
  const bool unique = later([&] { return args.boolean(2, "unique"); });
  std::vector<KeyPart> parts = later([&] { return parts_arg(args, 3); });
  const bool in_frame = later([&] { return args.length() > 5 && args.boolean(5, "inFrame"); });
  Space& s = space();
  later.rethrow();
  return number_value(args.env(), s.create_index(name, type, unique, std::move(parts), in_frame));
}

// buildIndexBegin(name, type, unique, fields, types): createIndexAsync's start (index_build.h).
napi_value SpaceObject::build_index_begin(const Args& args) {
  Deferred later;
  const std::string name = later([&] { return args.string(0, "name"); });
  const std::string type = later([&] { return args.string(1, "type"); });
  const bool unique = later([&] { return args.boolean(2, "unique"); });
  std::vector<KeyPart> parts = later([&] { return parts_arg(args, 3); });
  Space& s = space();
  later.rethrow();
  s.begin_index_build(name, type, unique, std::move(parts));
  return nullptr;
}

// buildIndexStep(maxTuples, budgetMs): the new index's id once it is built, else -1.
napi_value SpaceObject::build_index_step(const Args& args) {
  Deferred later;
  const uint32_t max_tuples = later([&] { return args.u32(0, "maxTuples"); });
  const double budget_ms = later([&] { return args.number(1, "budgetMs"); });
  later([&] {
    if (max_tuples == 0) throw bad_arg("maxTuples", "positive");
    if (!(budget_ms > 0 && budget_ms <= 60000)) throw bad_arg("budgetMs", "in (0, 60000]");
  });
  Space& s = space();
  later.rethrow();
  return number_value(args.env(), double(s.index_build_step(max_tuples, uint64_t(budget_ms * 1e6))));
}

// insert(tuple, replace, start?, end?, now?): start/end, the tuple is that range of the Buffer
// (msgpackr's reused buffer); now: a TTL space's clock (an expired duplicate does not block).
napi_value SpaceObject::insert(const Args& args) {
  Deferred later;
  const uint8_t* data = nullptr;
  size_t size = 0;
  later([&] {
    if (!args.bytes_if(0, &data, &size)) throw bad_arg("tuple", "a Buffer");
  });
  const bool replace = later([&] { return args.boolean(1, "replace"); });
  size_t start = 0, end = size;
  later([&] {
    if (args.length() > 2 && !args.is_undefined(2)) {
      start = args.u32(2, "start");
      end = args.u32(3, "end");
      if (start > end || end > size) throw bad_arg("start/end", "a range inside the tuple Buffer");
    }
  });
  const Now now = later([&] { return now_arg(args, 4); });
  Space& s = space();
  later.rethrow();
  s.insert(data + start, end - start, replace, now);
  return nullptr;
}

// insertMany(tuples, now?)
napi_value SpaceObject::insert_many(const Args& args) {
  Deferred later;
  const uint8_t* data = nullptr;
  size_t size = 0;
  later([&] {
    if (!args.bytes_if(0, &data, &size)) throw bad_arg("tuples", "a Buffer");
  });
  const Now now = later([&] { return now_arg(args, 1); });
  Space& s = space();
  later.rethrow();
  return number_value(args.env(), double(s.insert_many(data, size, now)));
}

// get(index, key, scratch, now?)
napi_value SpaceObject::get(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const Now now = later([&] { return read_now(args, 3); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  return emit_tuple(args, 2, s.get(id, key.data(), key.size(), now));
}

// delete(key, scratch)
napi_value SpaceObject::remove(const Args& args) {
  Deferred later;
  const KeyArg key = later([&] { return key_arg(args, 0); });
  Space& s = space();
  s.primary();  // ER_NO_PRIMARY_INDEX before the key's errors
  later.rethrow();
  std::string out;
  if (!s.remove(key.data(), key.size(), &out)) return null_value(args.env());
  return emit(args, 1, out);
}

// select(index, key, iterator, limit, offset, scratch, now?)
napi_value SpaceObject::select(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const IterType type = later([&] { return iter_arg(args, 2); });
  const uint64_t limit = later([&] { return args.count(3, "limit"); });
  const uint64_t offset = later([&] { return args.count(4, "offset"); });
  const Now now = later([&] { return read_now(args, 6); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  std::string out;
  s.select(id, key.data(), key.size(), type, limit, offset, &out, now);
  return emit(args, 5, out);
}

// count(index, key, iterator, now?)
napi_value SpaceObject::count(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const IterType type = later([&] { return iter_arg(args, 2); });
  const Now now = later([&] { return read_now(args, 3); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  return number_value(args.env(), double(s.count(id, key.data(), key.size(), type, now)));
}

// minmax(index, key, max, scratch, now?)
napi_value SpaceObject::minmax(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const bool max = later([&] { return args.boolean(2, "max"); });
  const Now now = later([&] { return read_now(args, 4); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  return emit_tuple(args, 3, s.min_max(id, key.data(), key.size(), max, now));
}

// len(index?)
napi_value SpaceObject::len(const Args& args) {
  Deferred later;
  const bool whole = args.length() == 0 || args.is_undefined(0);
  const uint32_t id = whole ? 0 : later([&] { return args.u32(0, "index"); });
  Space& s = space();
  later.rethrow();
  return number_value(args.env(), double(whole ? s.len() : s.index(id).size()));
}

// memory(out): out[0] = tuple bytes, out[1] = index bytes. A typed array, not an Array: no
// [[Set]] runs, so no setter on Array.prototype or Object.prototype is called.
napi_value SpaceObject::memory(const Args& args) {
  Deferred later;
  OutArray out = later([&] { return OutArray(args, 0, 2, "a Float64Array of at least 2 elements"); });
  Space& s = space();
  later.rethrow();
  out.write({double(s.tuple_memory()), double(s.index_memory())});
  return nullptr;
}

napi_value SpaceObject::truncate(const Args& args) {
  space().truncate();
  return nullptr;
}

napi_value SpaceObject::drop(const Args& args) {
  space_.reset();
  return nullptr;
}

napi_value SpaceObject::begin(const Args& args) {
  return number_value(args.env(), double(space().begin()));
}

// commit(savepoint)
napi_value SpaceObject::commit(const Args& args) {
  Deferred later;
  const size_t savepoint = size_t(later([&] { return args.count(0, "savepoint"); }));
  Space& s = space();
  later.rethrow();
  s.commit(savepoint);
  return nullptr;
}

// rollback(savepoint)
napi_value SpaceObject::rollback(const Args& args) {
  Deferred later;
  const size_t savepoint = size_t(later([&] { return args.count(0, "savepoint"); }));
  Space& s = space();
  later.rethrow();
  s.rollback(savepoint);
  return nullptr;
}

// cursor(index, key, iterator, bounded?)
napi_value SpaceObject::cursor(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const IterType type = later([&] { return iter_arg(args, 2); });
  const bool bounded = later([&] { return args.length() > 3 && !args.is_undefined(3) && args.boolean(3, "bounded"); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  auto scan = std::make_unique<Scan>(s.make_cursor(id, key.data(), key.size(), type, bounded));
  return CursorObject::create(args.env(), args.data(), this, args.raw(0), std::move(scan));
}

// expireChunk(cursor, fieldno, scanSize, now, earlyBreak, mode, out, scratch)
// mode 0: commit, return nothing; 1: commit, return the deleted tuples; 2: leave the
// transaction open (out[4] is its savepoint) and return the deleted tuples, for onExpired.
napi_value SpaceObject::expire_chunk(const Args& args) {
  Deferred later;
  CursorObject* co = later([&] { return CursorObject::from_arg(args, 0, this); });
  const uint32_t fieldno = later([&] { return args.u32(1, "fieldno"); });
  const uint32_t scan_size = later([&] { return args.u32(2, "scanSize"); });
  const double now = later([&] { return args.number(3, "now"); });
  const bool early = later([&] { return args.boolean(4, "earlyBreak"); });
  const uint32_t mode = later([&] { return args.u32(5, "mode"); });
  later([&] {
    if (mode > 2) throw bad_arg("mode", "0, 1 or 2");
    if (scan_size == 0) throw bad_arg("scanSize", "positive");
  });
  OutArray out = later([&] { return OutArray(args, 6, 5, kOut5); });
  Space& s = space();
  later.rethrow();
  out.write({0, 0, 0, 0, 0});
  ChunkParams p;
  p.fieldno = fieldno;
  p.scan_size = scan_size;
  p.now = now;
  p.early_break = early;
  p.keep_open = mode == 2;
  std::string deleted;
  const ChunkResult r = co->scan().expire(s, p, mode > 0 ? &deleted : nullptr);
  out.write({double(r.checked), double(r.expired), r.pass_end ? 1.0 : 0.0, r.early_break ? 1.0 : 0.0,
             double(r.savepoint)});
  co->report_memory(args.env());
  if (mode == 0) return nullptr;
  return emit(args, 7, deleted);
}

// rollbackChunk(cursor, savepoint): undoes a chunk left open by mode 2 and puts the cursor back.
napi_value SpaceObject::rollback_chunk(const Args& args) {
  Deferred later;
  CursorObject* co = later([&] { return CursorObject::from_arg(args, 0, this); });
  const size_t savepoint = size_t(later([&] { return args.count(1, "savepoint"); }));
  Space& s = space();
  later.rethrow();
  co->scan().rollback_open(s, savepoint);
  return nullptr;
}

// scanChunk(cursor, scanSize, out, scratch): the visited tuples, for a JavaScript predicate.
napi_value SpaceObject::scan_chunk(const Args& args) {
  Deferred later;
  CursorObject* co = later([&] { return CursorObject::from_arg(args, 0, this); });
  const uint32_t scan_size = later([&] { return args.u32(1, "scanSize"); });
  later([&] {
    if (scan_size == 0) throw bad_arg("scanSize", "positive");
  });
  OutArray out = later([&] { return OutArray(args, 2, 5, kOut5); });
  space();
  later.rethrow();
  out.write({0, 0, 0, 0, 0});
  Scan& scan = co->scan();
  bool pass_end = false;
  const uint32_t n = scan.scan(scan_size, &pass_end);
  out.write({double(n), 0, pass_end ? 1.0 : 0.0, 0, 0});
  co->report_memory(args.env());
  return emit(args, 3, scan.visited());
}

// deleteVisited(cursor, positions, keepOpen, out, scratch): deletes visited tuples by position
// in one transaction; committed unless keepOpen (then out[4] is the savepoint). The positions
// are copied (they may live in a SharedArrayBuffer).
napi_value SpaceObject::delete_visited(const Args& args) {
  Deferred later;
  CursorObject* co = later([&] { return CursorObject::from_arg(args, 0, this); });
  const std::vector<uint32_t> positions = later([&] {
    size_t count = 0;
    const uint32_t* data =
        static_cast<const uint32_t*>(args.typed_array(1, napi_uint32_array, 0, &count, "positions", "a Uint32Array"));
    return std::vector<uint32_t>(data, data + count);
  });
  const bool keep_open = later([&] { return args.boolean(2, "keepOpen"); });
  OutArray out = later([&] { return OutArray(args, 3, 5, kOut5); });
  Space& s = space();
  later.rethrow();
  out.write({0, 0, 0, 0, 0});
  std::string deleted;
  const ChunkResult r = co->scan().delete_visited(s, positions.data(), positions.size(), keep_open, &deleted);
  out.write({0, double(r.expired), 0, 0, double(r.savepoint)});
  return emit(args, 4, deleted);
}

namespace {

constexpr size_t kWhole = SIZE_MAX - 1;  // bytes_arg(): no start/end arguments

// A Buffer argument, or the range [start, end) of it (msgpackr's reused buffer), copied: the
// engine reads it after checking it, and a Buffer over a SharedArrayBuffer can change meanwhile.
std::string bytes_arg(const Args& args, size_t i, size_t range, const char* name) {
  const uint8_t* data = nullptr;
  size_t size = 0;
  if (!args.bytes_if(i, &data, &size)) throw bad_arg(name, "a Buffer");
  size_t start = 0, end = size;
  if (args.length() > range && !args.is_undefined(range)) {
    start = args.u32(range, "start");
    end = args.u32(range + 1, "end");
    if (start > end || end > size) throw bad_arg("start/end", "a range inside the Buffer");
  }
  return std::string(reinterpret_cast<const char*>(data) + start, end - start);
}

}  // namespace

// update(index, key, ops, start, end, scratch): ops is [start, end) of the Buffer.
napi_value SpaceObject::update(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  const std::string ops = later([&] { return bytes_arg(args, 2, 3, "ops"); });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  return emit_tuple(args, 5,
                    s.update(id, key.data(), key.size(), reinterpret_cast<const uint8_t*>(ops.data()), ops.size()));
}

namespace {

// A JavaScript number as src/space/update.ts's packOpsFast (and msgpackr) packs it: an integer in
// [-2^31, 2^32) as the shortest MessagePack integer, anything else as a float64. Writes at most
// 9 bytes at out[n] and returns the new end.
size_t write_js_number(uint8_t* out, size_t n, double v) {
  if (std::trunc(v) == v && v >= -2147483648.0 && v < 4294967296.0) {
    if (v >= 0) {
      const uint32_t u = uint32_t(v);
      if (u < 0x80) {
        out[n++] = uint8_t(u);
      } else if (u < 0x100) {
        out[n++] = 0xcc;
        out[n++] = uint8_t(u);
      } else if (u < 0x10000) {
        out[n++] = 0xcd;
        out[n++] = uint8_t(u >> 8);
        out[n++] = uint8_t(u);
      } else {
        out[n++] = 0xce;
        for (int s = 24; s >= 0; s -= 8) out[n++] = uint8_t(u >> s);
      }
      return n;
    }
    const int32_t i = int32_t(v);
    const uint32_t u = uint32_t(i);
    if (i >= -32) {
      out[n++] = uint8_t(u);
    } else if (i >= -0x80) {
      out[n++] = 0xd0;
      out[n++] = uint8_t(u);
    } else if (i >= -0x8000) {
      out[n++] = 0xd1;
      out[n++] = uint8_t(u >> 8);
      out[n++] = uint8_t(u);
    } else {
      out[n++] = 0xd2;
      for (int s = 24; s >= 0; s -= 8) out[n++] = uint8_t(u >> s);
    }
    return n;
  }
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  out[n++] = 0xcb;
  for (int s = 56; s >= 0; s -= 8) out[n++] = uint8_t(bits >> s);
  return n;
}

}  // namespace

// updateNumber(index, key, op, field, value, scratch): update() with the one operation
// [op, field, value], where op is the operator's character code and field and value are
// numbers. The operation is packed here exactly as packOpsFast would pack it, so the engine
// sees the same bytes (and gives the same errors) without a Buffer to unwrap and copy.
napi_value SpaceObject::update_number(const Args& args) {
  Deferred early, later;
  const uint32_t id = early([&] { return args.u32(0, "index"); });
  const KeyArg key = later([&] { return key_arg(args, 1); });
  uint8_t ops[24];
  size_t n = 0;
  later([&] {
    const uint32_t op = args.u32(2, "op");
    const double field = args.number(3, "field");
    const double value = args.number(4, "value");
    if (op == 0 || op > 0x7f) throw bad_arg("op", "the character code of an update operator");
    ops[n++] = 0x91;  // [[op, field, value]]
    ops[n++] = 0x93;
    ops[n++] = 0xa1;
    ops[n++] = uint8_t(op);
    n = write_js_number(ops, n, field);
    n = write_js_number(ops, n, value);
  });
  Space& s = space();
  early.rethrow();
  s.index(id);  // ER_NO_SUCH_INDEX before the other arguments' errors
  later.rethrow();
  return emit_tuple(args, 5, s.update(id, key.data(), key.size(), ops, n));
}

// upsert(tuple, ops, start, end, want, scratch): ops is [start, end) of its Buffer; want: return
// the stored tuple (null when the update was dropped), else nothing.
napi_value SpaceObject::upsert(const Args& args) {
  Deferred later;
  const std::string tuple = later([&] { return bytes_arg(args, 0, kWhole, "tuple"); });
  const std::string ops = later([&] { return bytes_arg(args, 1, 2, "ops"); });
  const bool want = later([&] { return args.boolean(4, "want"); });
  Space& s = space();
  later.rethrow();
  Tuple* t = s.upsert(reinterpret_cast<const uint8_t*>(tuple.data()), tuple.size(),
                      reinterpret_cast<const uint8_t*>(ops.data()), ops.size());
  if (!want) return nullptr;
  return emit_tuple(args, 5, t);
}

// bsize(): the sum of the stored tuples' sizes, what maxBytes caps.
napi_value SpaceObject::bsize(const Args& args) {
  return number_value(args.env(), double(space().bsize()));
}

// takeEvicted(scratch): the tuples the last statement evicted (their bytes, one after another,
// in the scratch Buffer or a new one), then forgets them; 0 when it evicted none.
napi_value SpaceObject::take_evicted(const Args& args) {
  Space& s = space();
  if (s.evicted().empty()) return number_value(args.env(), 0);
  napi_value out = emit(args, 0, s.evicted());
  s.clear_evicted();
  return out;
}

napi_value SpaceObject::check_integrity(const Args& args) {
  return string_value(args.env(), space().check_integrity());
}

}  // namespace ce
