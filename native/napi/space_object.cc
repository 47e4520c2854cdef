#include "space_object.h"

#include <algorithm>

#include "cursor_object.h"
#include "expiry/chunk.h"
#include "msgpack.h"
#include "napi_util.h"

namespace ce {

namespace {

// A key argument: undefined/null (no parts), a number, string or boolean (one part), or a
// Buffer holding a packed array. Scalars are encoded here so the hot `get(id)` path packs
// nothing in JavaScript.
struct KeyArg {
  std::string owned;
  const uint8_t* data = nullptr;
  size_t size = 0;
};

KeyArg arg_key(const Args& info, size_t i) {
  KeyArg k;
  const Napi::Value v = info[i];
  napi_valuetype type = napi_undefined;
  if (napi_typeof(info.Env(), v, &type) != napi_ok) throw bad_arg("key", "a value");
  switch (type) {
    case napi_undefined:
    case napi_null:
      k.owned.push_back(char(0x90));
      break;
    case napi_number:
      mp::write_array_header(&k.owned, 1);
      mp::write_double(&k.owned, v.As<Napi::Number>().DoubleValue());
      break;
    case napi_boolean:
      mp::write_array_header(&k.owned, 1);
      mp::write_bool(&k.owned, v.As<Napi::Boolean>().Value());
      break;
    case napi_string: {
      const std::string s = v.As<Napi::String>().Utf8Value();
      mp::write_array_header(&k.owned, 1);
      mp::write_str(&k.owned, s.data(), s.size());
      break;
    }
    default: {
      Bytes packed;
      if (!buffer_info(info, i, &packed))
        throw DbError(err::kKeyType, "Key must be a number, string, boolean, array of parts, or undefined");
      k.data = packed.data;
      k.size = packed.size;
      return k;
    }
  }
  k.data = reinterpret_cast<const uint8_t*>(k.owned.data());
  k.size = k.owned.size();
  return k;
}

IterType arg_iter(const Args& info, size_t i) {
  const uint32_t v = arg_u32(info, i, "iterator");
  if (v > uint32_t(IterType::kLt)) throw DbError(err::kIteratorType, "Unknown iterator type #" + std::to_string(v));
  return IterType(v);
}

void write_out(const Args& info, size_t i, std::initializer_list<double> values) {
  if (i >= info.Length() || !info[i].IsTypedArray() ||
      info[i].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array ||
      info[i].As<Napi::Float64Array>().ElementLength() < values.size())
    throw bad_arg("out", "a Float64Array of at least 5 elements");
  Napi::Float64Array out = info[i].As<Napi::Float64Array>();
  size_t k = 0;
  for (double v : values) out[k++] = v;
}

}  // namespace

template <Napi::Value (SpaceObject::*Method)(const Args&), bool kChangesMemory>
Napi::Value SpaceObject::Call(const Napi::CallbackInfo& info) {
  SpaceObject* self = nullptr;
  Napi::Value result = guard(info.Env(), [&]() -> Napi::Value {
    AddonData* data = info.Env().GetInstanceData<AddonData>();
    void* ptr = nullptr;
    if (info.Length() < 1 || napi_get_value_external(info.Env(), info[0], &ptr) != napi_ok ||
        data->spaces.count(static_cast<SpaceObject*>(ptr)) == 0)
      throw bad_arg("space", "a space handle made by createSpace()");
    self = static_cast<SpaceObject*>(ptr);
    return (self->*Method)(Args(info, 1));
  });
  if (kChangesMemory && self != nullptr) self->report_memory(info.Env());
  return result;
}

void SpaceObject::report_memory(napi_env env) {
  const int64_t held = space_ ? int64_t(space_->tuple_memory() + space_->index_memory()) : 0;
  const int64_t now = std::min(held, kReportCap);
  const int64_t delta = now - reported_;
  if (delta == 0 || (now != 0 && delta > -kReportStep && delta < kReportStep)) return;
  int64_t total = 0;
  // Plain N-API: no C++ exception and no effect on an exception already pending.
  if (napi_adjust_external_memory(env, delta, &total) == napi_ok) reported_ = now;
}

void SpaceObject::Register(Napi::Env env, Napi::Object exports) {
  exports.Set("createSpace", Napi::Function::New<CreateSpace>(env, "createSpace"));
  Napi::Object methods = Napi::Object::New(env);
  methods.Set("createIndex", Napi::Function::New<Call<&SpaceObject::CreateIndex, true>>(env, "createIndex"));
  methods.Set("insert", Napi::Function::New<Call<&SpaceObject::Insert, true>>(env, "insert"));
  methods.Set("insertMany", Napi::Function::New<Call<&SpaceObject::InsertMany, true>>(env, "insertMany"));
  methods.Set("get", Napi::Function::New<Call<&SpaceObject::Get>>(env, "get"));
  methods.Set("delete", Napi::Function::New<Call<&SpaceObject::Delete, true>>(env, "delete"));
  methods.Set("select", Napi::Function::New<Call<&SpaceObject::Select>>(env, "select"));
  methods.Set("count", Napi::Function::New<Call<&SpaceObject::Count>>(env, "count"));
  methods.Set("minmax", Napi::Function::New<Call<&SpaceObject::MinMax>>(env, "minmax"));
  methods.Set("len", Napi::Function::New<Call<&SpaceObject::Len>>(env, "len"));
  methods.Set("memory", Napi::Function::New<Call<&SpaceObject::Memory>>(env, "memory"));
  methods.Set("truncate", Napi::Function::New<Call<&SpaceObject::Truncate, true>>(env, "truncate"));
  methods.Set("drop", Napi::Function::New<Call<&SpaceObject::Drop, true>>(env, "drop"));
  methods.Set("begin", Napi::Function::New<Call<&SpaceObject::Begin>>(env, "begin"));
  methods.Set("commit", Napi::Function::New<Call<&SpaceObject::Commit, true>>(env, "commit"));
  methods.Set("rollback", Napi::Function::New<Call<&SpaceObject::Rollback, true>>(env, "rollback"));
  methods.Set("cursor", Napi::Function::New<Call<&SpaceObject::NewCursor>>(env, "cursor"));
  methods.Set("expireChunk", Napi::Function::New<Call<&SpaceObject::ExpireChunk, true>>(env, "expireChunk"));
  methods.Set("rollbackChunk", Napi::Function::New<Call<&SpaceObject::RollbackChunk, true>>(env, "rollbackChunk"));
  methods.Set("scanChunk", Napi::Function::New<Call<&SpaceObject::ScanChunk>>(env, "scanChunk"));
  methods.Set("deleteVisited", Napi::Function::New<Call<&SpaceObject::DeleteVisited, true>>(env, "deleteVisited"));
  methods.Set("checkIntegrity", Napi::Function::New<Call<&SpaceObject::CheckIntegrity>>(env, "checkIntegrity"));
  exports.Set("space", methods);
}

// createSpace(name, maxTupleSize): a new space's handle.
Napi::Value SpaceObject::CreateSpace(const Napi::CallbackInfo& cb) {
  const Args info(cb, 0);
  return guard(info.Env(), [&]() -> Napi::Value {
    const std::string name = arg_string(info, 0, "name");
    const uint32_t max = arg_u32(info, 1, "maxTupleSize");
    if (max == 0) throw bad_arg("maxTupleSize", "positive");
    AddonData* data = info.Env().GetInstanceData<AddonData>();
    auto self = std::make_unique<SpaceObject>(name, max);
    data->spaces.reserve(data->spaces.size() + 1);
    Napi::External<SpaceObject> ext = Napi::External<SpaceObject>::New(
        info.Env(), self.get(), [](Napi::Env env, SpaceObject* dead) {
          if (AddonData* d = env.GetInstanceData<AddonData>()) d->spaces.erase(dead);
          dead->space_.reset();
          dead->report_memory(env);
          delete dead;
        });
    self->handle_ = Napi::Weak(Napi::Value(ext));
    data->spaces.insert(self.release());
    return ext;
  });
}

SpaceObject::SpaceObject(std::string name, uint32_t max_tuple_size)
    : space_(std::make_unique<Space>(name, max_tuple_size)), name_(std::move(name)) {}

Space& SpaceObject::space() {
  if (!space_) throw DbError(err::kSpaceDropped, "Space '" + name_ + "' was dropped");
  return *space_;
}

Napi::Value SpaceObject::CreateIndex(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const std::string name = arg_string(info, 0, "name");
    const std::string type = arg_string(info, 1, "type");
    const bool unique = arg_bool(info, 2, "unique");
    if (info.Length() < 5 || !info[3].IsArray() || !info[4].IsArray()) throw bad_arg("parts", "two arrays");
    Napi::Array fields = info[3].As<Napi::Array>(), types = info[4].As<Napi::Array>();
    if (fields.Length() != types.Length() || fields.Length() == 0 || fields.Length() > 64)
      throw bad_arg("parts", "1 to 64 fields with one type each");
    std::vector<KeyPart> parts;
    for (uint32_t i = 0; i < fields.Length(); i++) {
      Napi::Value f = fields[i], t = types[i];
      if (!f.IsNumber() || !t.IsString()) throw bad_arg("parts", "numbers and type names");
      const double fd = f.As<Napi::Number>().DoubleValue();
      if (!(fd >= 0 && fd < 65536) || std::trunc(fd) != fd) throw bad_arg("field", "an integer in [0, 65536)");
      FieldType ft;
      if (!parse_field_type(t.As<Napi::String>().Utf8Value(), &ft))
        throw DbError(err::kIllegalParams, "Unknown field type '" + t.As<Napi::String>().Utf8Value() + "'");
      parts.push_back(KeyPart{uint32_t(fd), ft});
    }
    return Napi::Number::New(info.Env(), s.create_index(name, type, unique, std::move(parts)));
  });
}

Napi::Value SpaceObject::Insert(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const Bytes b = arg_bytes(info, 0, "tuple");
    const bool replace = arg_bool(info, 1, "replace");
    // Optional [start, end): the tuple is that range of the Buffer (msgpackr's reused buffer).
    size_t start = 0, end = b.size;
    if (info.Length() > 2 && !info[2].IsUndefined()) {
      start = arg_u32(info, 2, "start");
      end = arg_u32(info, 3, "end");
      if (start > end || end > b.size) throw bad_arg("start/end", "a range inside the tuple Buffer");
    }
    s.insert(b.data + start, end - start, replace);
    return info.Env().Undefined();
  });
}

Napi::Value SpaceObject::InsertMany(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const Bytes b = arg_bytes(info, 0, "tuples");
    return Napi::Number::New(info.Env(), double(s.insert_many(b.data, b.size)));
  });
}

Napi::Value SpaceObject::Get(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const uint32_t index = arg_u32(info, 0, "index");
    s.index(index);  // ER_NO_SUCH_INDEX before any other argument is read, as before
    const KeyArg key = arg_key(info, 1);
    return emit_tuple(info, 2, s.get(index, key.data, key.size));
  });
}

Napi::Value SpaceObject::Delete(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    s.primary();  // ER_NO_PRIMARY_INDEX before the key is read, as before
    const KeyArg key = arg_key(info, 0);
    std::string out;
    if (!s.remove(key.data, key.size, &out)) return info.Env().Null();
    return emit(info, 1, out);
  });
}

Napi::Value SpaceObject::Select(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const uint32_t index = arg_u32(info, 0, "index");
    s.index(index);  // ER_NO_SUCH_INDEX before any other argument is read, as before
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    const uint64_t limit = arg_count(info, 3, "limit");
    const uint64_t offset = arg_count(info, 4, "offset");
    std::string out;
    s.select(index, key.data, key.size, type, limit, offset, &out);
    return emit(info, 5, out);
  });
}

Napi::Value SpaceObject::Count(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const uint32_t index = arg_u32(info, 0, "index");
    s.index(index);  // ER_NO_SUCH_INDEX before any other argument is read, as before
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    return Napi::Number::New(info.Env(), double(s.count(index, key.data, key.size, type)));
  });
}

Napi::Value SpaceObject::MinMax(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const uint32_t index = arg_u32(info, 0, "index");
    s.index(index);  // ER_NO_SUCH_INDEX before any other argument is read, as before
    const KeyArg key = arg_key(info, 1);
    const bool max = arg_bool(info, 2, "max");
    return emit_tuple(info, 3, s.min_max(index, key.data, key.size, max));
  });
}

Napi::Value SpaceObject::Len(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    if (info.Length() > 0 && !info[0].IsUndefined())
      return Napi::Number::New(info.Env(), double(s.index(arg_u32(info, 0, "index")).size()));
    return Napi::Number::New(info.Env(), double(s.len()));
  });
}

Napi::Value SpaceObject::Memory(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Napi::Array a = Napi::Array::New(info.Env(), 2);
    a.Set(uint32_t(0), Napi::Number::New(info.Env(), double(s.tuple_memory())));
    a.Set(uint32_t(1), Napi::Number::New(info.Env(), double(s.index_memory())));
    return a;
  });
}

Napi::Value SpaceObject::Truncate(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space().truncate();
    return info.Env().Undefined();
  });
}

Napi::Value SpaceObject::Drop(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space_.reset();
    return info.Env().Undefined();
  });
}

Napi::Value SpaceObject::Begin(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value { return Napi::Number::New(info.Env(), double(space().begin())); });
}

Napi::Value SpaceObject::Commit(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space().commit(size_t(arg_count(info, 0, "savepoint")));
    return info.Env().Undefined();
  });
}

Napi::Value SpaceObject::Rollback(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space().rollback(size_t(arg_count(info, 0, "savepoint")));
    return info.Env().Undefined();
  });
}

Napi::Value SpaceObject::NewCursor(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    const uint32_t index = arg_u32(info, 0, "index");
    s.index(index);  // ER_NO_SUCH_INDEX before any other argument is read, as before
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    const bool bounded = info.Length() > 3 && !info[3].IsUndefined() && arg_bool(info, 3, "bounded");
    return CursorObject::Create(info.Env(), this, handle(),
                                std::make_unique<Scan>(s.make_cursor(index, key.data, key.size, type, bounded)));
  });
}

// expireChunk(cursor, fieldno, scanSize, now, earlyBreak, mode, out, scratch)
// mode 0: commit, return nothing; 1: commit, return the deleted tuples; 2: leave the
// transaction open (out[4] is its savepoint) and return the deleted tuples, for onExpired.
Napi::Value SpaceObject::ExpireChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Scan& scan = CursorObject::FromArg(info, 0, this)->scan();
    ChunkParams p;
    p.fieldno = arg_u32(info, 1, "fieldno");
    p.scan_size = arg_u32(info, 2, "scanSize");
    p.now = arg_number(info, 3, "now");
    p.early_break = arg_bool(info, 4, "earlyBreak");
    const uint32_t mode = arg_u32(info, 5, "mode");
    if (mode > 2) throw bad_arg("mode", "0, 1 or 2");
    if (p.scan_size == 0) throw bad_arg("scanSize", "positive");
    p.keep_open = mode == 2;
    write_out(info, 6, {0, 0, 0, 0, 0});
    std::string deleted;
    const ChunkResult r = scan.expire(s, p, mode > 0 ? &deleted : nullptr);
    write_out(info, 6, {double(r.checked), double(r.expired), r.pass_end ? 1.0 : 0.0, r.early_break ? 1.0 : 0.0,
                        double(r.savepoint)});
    if (mode == 0) return info.Env().Undefined();
    return emit(info, 7, deleted);
  });
}

// rollbackChunk(cursor, savepoint): undoes a chunk left open by mode 2 and puts the cursor back.
Napi::Value SpaceObject::RollbackChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Scan& scan = CursorObject::FromArg(info, 0, this)->scan();
    scan.rollback_open(s, size_t(arg_count(info, 1, "savepoint")));
    return info.Env().Undefined();
  });
}

// scanChunk(cursor, scanSize, out, scratch): the visited tuples, for a JavaScript predicate.
Napi::Value SpaceObject::ScanChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space();
    Scan& scan = CursorObject::FromArg(info, 0, this)->scan();
    const uint32_t scan_size = arg_u32(info, 1, "scanSize");
    if (scan_size == 0) throw bad_arg("scanSize", "positive");
    write_out(info, 2, {0, 0, 0, 0, 0});
    bool pass_end = false;
    const uint32_t n = scan.scan(scan_size, &pass_end);
    write_out(info, 2, {double(n), 0, pass_end ? 1.0 : 0.0, 0, 0});
    return emit(info, 3, scan.visited());
  });
}

// deleteVisited(cursor, positions, keepOpen, out, scratch): deletes visited tuples by position
// in one transaction; committed unless keepOpen (then out[4] is the savepoint).
Napi::Value SpaceObject::DeleteVisited(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Scan& scan = CursorObject::FromArg(info, 0, this)->scan();
    if (info.Length() < 2 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
      throw bad_arg("positions", "a Uint32Array");
    Napi::Uint32Array positions = info[1].As<Napi::Uint32Array>();
    const bool keep_open = arg_bool(info, 2, "keepOpen");
    write_out(info, 3, {0, 0, 0, 0, 0});
    std::string deleted;
    const ChunkResult r = scan.delete_visited(s, positions.Data(), positions.ElementLength(), keep_open, &deleted);
    write_out(info, 3, {0, double(r.expired), 0, 0, double(r.savepoint)});
    return emit(info, 4, deleted);
  });
}

Napi::Value SpaceObject::CheckIntegrity(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), space().check_integrity()); });
}

}  // namespace ce
