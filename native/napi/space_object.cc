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

const char* iter_name(IterType t) {
  static const char* names[] = {"EQ", "REQ", "ALL", "GE", "GT", "LE", "LT"};
  return names[int(t)];
}

// Refuses what an index cannot do: HASH walks only ALL and EQ, with a full key.
void check_iterator(const Index& index, IterType type, uint32_t parts) {
  if (index.type() != IndexType::kHash) return;
  if (type != IterType::kAll && type != IterType::kEq)
    throw DbError(err::kIteratorType, std::string("HASH index '") + index.name() + "' does not support iterator '" +
                                          iter_name(type) + "' (only 'ALL' and 'EQ')");
  if (type == IterType::kEq && parts != 0 && parts != index.key_def().part_count())
    throw DbError(err::kKeyPartCount, "HASH index '" + index.name() + "' needs a full key (" +
                                          std::to_string(index.key_def().part_count()) + " parts), got " +
                                          std::to_string(parts));
}

std::unique_ptr<Cursor> make_cursor(Space& space, Index& index, const KeyArg& key, IterType type, bool bounded = false) {
  const uint8_t* first;
  const uint32_t parts = space.check_key(index, key.data, key.size, &first);
  check_iterator(index, type, parts);
  return std::make_unique<Cursor>(&index, type, std::string(reinterpret_cast<const char*>(key.data), key.size), parts,
                                  bounded);
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
    IndexType it;
    if (type == "TREE") it = IndexType::kTree;
    else if (type == "HASH") it = IndexType::kHash;
    else throw DbError(err::kIllegalParams, "Unknown index type '" + type + "'");
    return Napi::Number::New(info.Env(), s.create_index(name, it, unique, std::move(parts)));
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
    Index& index = s.index(arg_u32(info, 0, "index"));
    const KeyArg key = arg_key(info, 1);
    const uint8_t* first;
    const uint32_t parts = s.check_key(index, key.data, key.size, &first);
    if (!index.unique())
      throw DbError(err::kUnsupported, "get() needs a unique index; '" + index.name() + "' is not unique, use select()");
    if (parts != index.key_def().part_count())
      throw DbError(err::kKeyPartCount, "get() on index '" + index.name() + "' needs a full key (" +
                                            std::to_string(index.key_def().part_count()) + " parts), got " +
                                            std::to_string(parts));
    return emit_tuple(info, 2, index.get(first));
  });
}

Napi::Value SpaceObject::Delete(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Index& pk = s.primary();
    const KeyArg key = arg_key(info, 0);
    const uint8_t* first;
    const uint32_t parts = s.check_key(pk, key.data, key.size, &first);
    if (parts != pk.key_def().part_count())
      throw DbError(err::kKeyPartCount, "delete() needs a full primary key (" +
                                            std::to_string(pk.key_def().part_count()) + " parts), got " +
                                            std::to_string(parts));
    std::string out;
    if (!s.remove(first, &out)) return info.Env().Null();
    return emit(info, 1, out);
  });
}

Napi::Value SpaceObject::Select(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Index& index = s.index(arg_u32(info, 0, "index"));
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    uint64_t limit = arg_count(info, 3, "limit");
    uint64_t offset = arg_count(info, 4, "offset");
    std::unique_ptr<Cursor> c = make_cursor(s, index, key, type);
    std::string out;
    while (limit > 0) {
      Tuple* t = c->next();
      if (t == nullptr) break;
      if (offset > 0) {
        offset--;
        continue;
      }
      out.append(reinterpret_cast<const char*>(t->data()), t->size);
      limit--;
    }
    return emit(info, 5, out);
  });
}

Napi::Value SpaceObject::Count(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Index& index = s.index(arg_u32(info, 0, "index"));
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    std::unique_ptr<Cursor> c = make_cursor(s, index, key, type);
    if (c->type() == IterType::kAll) return Napi::Number::New(info.Env(), double(index.size()));
    double n = 0;
    while (c->next() != nullptr) n++;
    return Napi::Number::New(info.Env(), n);
  });
}

Napi::Value SpaceObject::MinMax(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    Index& index = s.index(arg_u32(info, 0, "index"));
    const KeyArg key = arg_key(info, 1);
    const bool max = arg_bool(info, 2, "max");
    if (index.type() != IndexType::kTree)
      throw DbError(err::kUnsupported, "HASH index '" + index.name() + "' does not support " + (max ? "max()" : "min()"));
    std::unique_ptr<Cursor> c = make_cursor(s, index, key, max ? IterType::kReq : IterType::kEq);
    return emit_tuple(info, 3, c->next());
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
    Index& index = s.index(arg_u32(info, 0, "index"));
    const KeyArg key = arg_key(info, 1);
    const IterType type = arg_iter(info, 2);
    const bool bounded = info.Length() > 3 && !info[3].IsUndefined() && arg_bool(info, 3, "bounded");
    return CursorObject::Create(info.Env(), this, handle(), make_cursor(s, index, key, type, bounded));
  });
}

// expireChunk(cursor, fieldno, scanSize, now, earlyBreak, mode, out, scratch)
// mode 0: commit, return nothing; 1: commit, return the deleted tuples; 2: leave the
// transaction open (out[4] is its savepoint) and return the deleted tuples, for onExpired.
Napi::Value SpaceObject::ExpireChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    CursorObject* co = CursorObject::FromArg(info, 0, this);
    Cursor& c = co->cursor();
    const uint32_t fieldno = arg_u32(info, 1, "fieldno");
    const uint32_t scan_size = arg_u32(info, 2, "scanSize");
    const double now = arg_number(info, 3, "now");
    const bool early = arg_bool(info, 4, "earlyBreak");
    const uint32_t mode = arg_u32(info, 5, "mode");
    if (mode > 2) throw bad_arg("mode", "0, 1 or 2");
    if (scan_size == 0) throw bad_arg("scanSize", "positive");
    write_out(info, 6, {0, 0, 0, 0, 0});
    if (early && (c.index()->type() != IndexType::kTree || c.index()->key_def().parts()[0].fieldno != fieldno))
      throw DbError(err::kIllegalParams, "Early break needs a TREE index whose first part is the TTL field");
    co->saved() = c.save();
    std::string deleted;
    const size_t sp = s.begin();
    ChunkResult r;
    try {
      r = expire_chunk(s, c, fieldno, scan_size, now, early, mode > 0 ? &deleted : nullptr);
      if (mode < 2) s.commit(sp);
    } catch (...) {
      s.rollback(sp);
      c.restore(co->saved());
      throw;
    }
    write_out(info, 6, {double(r.checked), double(r.expired), r.pass_end ? 1.0 : 0.0, r.early_break ? 1.0 : 0.0, double(sp)});
    if (mode == 0) return info.Env().Undefined();
    return emit(info, 7, deleted);
  });
}

// rollbackChunk(cursor, savepoint): undoes a chunk left open by mode 2 and puts the cursor back.
Napi::Value SpaceObject::RollbackChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    CursorObject* co = CursorObject::FromArg(info, 0, this);
    Cursor& c = co->cursor();
    s.rollback(size_t(arg_count(info, 1, "savepoint")));
    c.restore(co->saved());
    c.detach();
    return info.Env().Undefined();
  });
}

// scanChunk(cursor, scanSize, out, scratch): the visited tuples, for a JavaScript predicate.
Napi::Value SpaceObject::ScanChunk(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    space();
    CursorObject* co = CursorObject::FromArg(info, 0, this);
    Cursor& c = co->cursor();
    const uint32_t scan_size = arg_u32(info, 1, "scanSize");
    if (scan_size == 0) throw bad_arg("scanSize", "positive");
    write_out(info, 2, {0, 0, 0, 0, 0});
    co->saved() = c.save();
    bool pass_end = false;
    const uint32_t n = scan_chunk(c, scan_size, &pass_end);
    write_out(info, 2, {double(n), 0, pass_end ? 1.0 : 0.0, 0, 0});
    return emit(info, 3, c.visited());
  });
}

// deleteVisited(cursor, positions, keepOpen, out, scratch): deletes visited tuples by position
// in one transaction; committed unless keepOpen (then out[4] is the savepoint).
Napi::Value SpaceObject::DeleteVisited(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Space& s = space();
    CursorObject* co = CursorObject::FromArg(info, 0, this);
    Cursor& c = co->cursor();
    if (info.Length() < 2 || !info[1].IsTypedArray() ||
        info[1].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array)
      throw bad_arg("positions", "a Uint32Array");
    Napi::Uint32Array positions = info[1].As<Napi::Uint32Array>();
    const bool keep_open = arg_bool(info, 2, "keepOpen");
    write_out(info, 3, {0, 0, 0, 0, 0});
    std::string deleted;
    const size_t sp = s.begin();
    uint32_t removed;
    try {
      removed = delete_visited(s, c, positions.Data(), positions.ElementLength(), &deleted);
      if (!keep_open) s.commit(sp);
    } catch (...) {
      s.rollback(sp);
      c.restore(co->saved());
      throw;
    }
    write_out(info, 3, {0, double(removed), 0, 0, double(sp)});
    return emit(info, 4, deleted);
  });
}

Napi::Value SpaceObject::CheckIntegrity(const Args& info) {
  return guard(info.Env(), [&]() -> Napi::Value { return Napi::String::New(info.Env(), space().check_integrity()); });
}

}  // namespace ce
