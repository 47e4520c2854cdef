#include "update.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "errors.h"
#include "msgpack.h"
#include "space.h"

namespace ce {

namespace {

DbError op_error(const std::string& what) { return DbError(err::kUpdateOp, "update: " + what); }

std::string op_name(char op) { return std::string("'") + op + "'"; }

bool read_int(const uint8_t* p, int64_t* out) {
  mp::Num n;
  if (!mp::read_num(p, &n)) return false;
  if (n.kind == mp::Num::kUint) {
    if (n.u > uint64_t(INT64_MAX)) return false;
    *out = int64_t(n.u);
    return true;
  }
  if (n.kind == mp::Num::kInt) {
    *out = n.i;
    return true;
  }
  if (!std::isfinite(n.d) || std::trunc(n.d) != n.d || n.d < -9.2e18 || n.d > 9.2e18) return false;
  *out = int64_t(n.d);
  return true;
}

// A non-negative integer (an integral float64 counts: msgpackr writes integers >= 2^32 so).
bool read_uint(const uint8_t* p, uint64_t* out) {
  mp::Num n;
  if (!mp::read_num(p, &n)) return false;
  if (n.kind == mp::Num::kUint) {
    *out = n.u;
    return true;
  }
  if (n.kind == mp::Num::kDouble && mp::num_is_integral(n) && n.d >= 0) {
    *out = uint64_t(n.d);
    return true;
  }
  return false;
}

void put_be(std::string* out, uint64_t v, int bytes) {
  for (int s = (bytes - 1) * 8; s >= 0; s -= 8) out->push_back(char(v >> s));
}

void write_uint(std::string* out, uint64_t u) {
  if (u < 128) out->push_back(char(u));
  else if (u <= 0xff) { out->push_back(char(0xcc)); put_be(out, u, 1); }
  else if (u <= 0xffff) { out->push_back(char(0xcd)); put_be(out, u, 2); }
  else if (u <= 0xffffffffULL) { out->push_back(char(0xce)); put_be(out, u, 4); }
  else { out->push_back(char(0xcf)); put_be(out, u, 8); }
}

void write_int(std::string* out, int64_t i) {
  if (i >= 0) return write_uint(out, uint64_t(i));
  if (i >= -32) out->push_back(char(int8_t(i)));
  else if (i >= INT8_MIN) { out->push_back(char(0xd0)); put_be(out, uint64_t(i), 1); }
  else if (i >= INT16_MIN) { out->push_back(char(0xd1)); put_be(out, uint64_t(i), 2); }
  else if (i >= INT32_MIN) { out->push_back(char(0xd2)); put_be(out, uint64_t(i), 4); }
  else { out->push_back(char(0xd3)); put_be(out, uint64_t(i), 8); }
}

void write_float64(std::string* out, double d) {
  uint64_t b;
  std::memcpy(&b, &d, 8);
  out->push_back(char(0xcb));
  put_be(out, b, 8);
}

// An operand of '+' and '-' that is an integer: any integer encoding, or a float64 with an integral
// value up to 2^53 in magnitude (how msgpackr writes integers past 32 bits, and write_integer
// below too), so that a counter past 2^32 keeps exact integer arithmetic.
bool exact_integer(const mp::Num& n, __int128* out) {
  if (n.kind == mp::Num::kUint) *out = __int128(n.u);
  else if (n.kind == mp::Num::kInt) *out = __int128(n.i);
  else if (mp::num_is_integral(n) && std::fabs(n.d) <= 9007199254740992.0) *out = __int128(int64_t(n.d));
  else return false;
  return true;
}

// An integer result, written as msgpackr writes that value as a JavaScript number, so that it
// reads back as the same type an insert of it would: a 32-bit integer encoding when it fits, a
// float64 up to 2^53 in magnitude (exact there), and a 64-bit integer only beyond (a BigInt on
// read). Without the float64 step a counter that crossed 2^32 came back as a BigInt.
void write_integer(std::string* out, __int128 r) {
  constexpr __int128 kExact = __int128(1) << 53;
  if (r >= INT32_MIN && r <= __int128(UINT32_MAX)) {
    if (r >= 0) write_uint(out, uint64_t(r));
    else write_int(out, int64_t(r));
  } else if (r >= -kExact && r <= kExact) {
    write_float64(out, double(int64_t(r)));
  } else if (r >= 0) {
    write_uint(out, uint64_t(r));
  } else {
    write_int(out, int64_t(r));
  }
}

void write_str_header(std::string* out, size_t n) {
  if (n < 32) out->push_back(char(0xa0 | n));
  else if (n <= 0xff) { out->push_back(char(0xd9)); put_be(out, n, 1); }
  else if (n <= 0xffff) { out->push_back(char(0xda)); put_be(out, n, 2); }
  else { out->push_back(char(0xdb)); put_be(out, n, 4); }
}

}  // namespace

void UpdateOps::parse(const uint8_t* data, size_t size) {
  ops_.clear();
  if (size == 0 || mp::check(data, data + size) != data + size || !mp::is_array(data))
    throw op_error("operations must be a MessagePack array of operations");
  const uint8_t* p = data;
  const uint32_t count = mp::read_array(&p);
  if (count > kMaxOps) throw op_error("too many operations (" + std::to_string(count) + ", at most 4000)");
  ops_.reserve(count);
  for (uint32_t i = 0; i < count; i++) {
    auto fail = [i](const std::string& what) { return op_error("operation #" + std::to_string(i + 1) + what); };
    if (!mp::is_array(p)) throw fail(" must be an array [op, field, ...]");
    const uint8_t* q = p;
    const uint32_t n = mp::read_array(&q);
    p = mp::next(p);
    uint32_t len = 0;
    const uint8_t* name = n > 0 ? mp::read_str(q, &len) : nullptr;
    // (strchr also finds the string's terminating NUL: an operator "\0" is not one.)
    if (name == nullptr || len != 1 || name[0] == 0 || std::strchr("=+-&|^!#:", char(name[0])) == nullptr)
      throw fail(": unknown operator (expected one of = + - & | ^ ! # :)");
    Op op;
    op.op = char(name[0]);
    const uint32_t want = op.op == ':' ? 5 : 3;
    if (n != want)
      throw fail(" " + op_name(op.op) + " takes " + std::to_string(want) + " elements, got " +
                     std::to_string(n));
    q = mp::next(q);
    int64_t field;
    if (!read_int(q, &field) || field == 0 || field > INT32_MAX || field < -INT32_MAX)
      throw fail(": field must be a non-zero integer (1-based, or negative from the end)");
    op.field = int32_t(field);
    q = mp::next(q);
    op.arg = q;
    op.arg_end = mp::next(q);
    mp::Num num;
    uint64_t u;
    int64_t i64;
    switch (op.op) {
      case '+': case '-':
        if (!mp::read_num(q, &num)) throw fail(" " + op_name(op.op) + ": the argument must be a number");
        if (num.kind == mp::Num::kDouble && std::isnan(num.d))
          throw fail(" " + op_name(op.op) + ": the argument must not be NaN");
        break;
      case '&': case '|': case '^':
        if (!read_uint(q, &u))
          throw fail(" " + op_name(op.op) + ": the argument must be a non-negative integer");
        break;
      case '#':
        if (!read_uint(q, &u) || u == 0 || u > UINT32_MAX)
          throw fail(" '#': the count must be a positive integer");
        break;
      case ':': {
        if (!read_int(q, &i64)) throw fail(" ':': the position must be an integer");
        const uint8_t* l = op.arg_end;
        if (!read_int(l, &op.len)) throw fail(" ':': the length must be an integer");
        l = mp::next(l);
        op.str = mp::read_str(l, &op.str_len);
        if (op.str == nullptr)
          throw fail(" ':': the replacement must be a string");
        break;
      }
      default: break;  // '=' '!': any value
    }
    ops_.push_back(op);
  }
}

void UpdateOps::trim(size_t keep) noexcept {
  if (ops_.capacity() * sizeof(Op) > keep) std::vector<Op>().swap(ops_);
  if (fields_.capacity() * sizeof(Field) > keep) std::vector<Field>().swap(fields_);
  if (store_.capacity() > keep) std::string().swap(store_);
  if (splice_.capacity() > keep) std::string().swap(splice_);
  if (compact_.capacity() > keep) std::string().swap(compact_);
}

// Each splice writes a whole new copy of its field. Appended one after another, 4,000 splices of
// a 100 KB field held 400 MB here (4 GB for a 1 MB field) before the tuple was built.
UpdateOps::Field UpdateOps::replace_owned(const Field& old, const std::string& bytes) const {
  std::vector<Field>& fields = fields_;
  std::string& store = store_;
  if (old.owned && old.off + old.n == store.size()) store.resize(old.off);
  if (store.size() + bytes.size() > compact_at_) {
    // Unused bytes come from replaced values; a compaction walks every field, so it waits until
    // that much was appended since the last one (amortized: each appended byte pays for one).
    compact_.clear();
    for (Field& f : fields) {
      if (!f.owned || &f == &old) continue;  // the value being replaced
      const size_t off = compact_.size();
      compact_.append(store, f.off, f.n);
      f.off = off;
    }
    store.swap(compact_);
    compact_at_ = store.size() + bytes.size() + std::max<size_t>({size_t(64) << 10, store.size(), 16 * fields.size()});
  }
  const size_t from = store.size();
  store.append(bytes);
  return Field{nullptr, from, uint32_t(bytes.size()), true};
}

void UpdateOps::apply(const uint8_t* tuple, std::string* out, bool skip_failed) const {
  std::vector<Field>& fields = fields_;
  std::string& store = store_;
  fields.clear();
  store.clear();
  const uint8_t* p = tuple;
  const uint32_t count = mp::read_array(&p);
  for (uint32_t i = 0; i < count; i++) {
    const uint8_t* q = mp::next(p);
    fields.push_back(Field{p, 0, uint32_t(q - p), false});
    p = q;
  }
  compact_at_ = std::max<size_t>(size_t(64) << 10, 16 * fields.size());
  auto bytes = [&](const Field& f) {
    return f.owned ? reinterpret_cast<const uint8_t*>(store.data()) + f.off : f.p;
  };
  auto owned = [&](size_t from) { return Field{nullptr, from, uint32_t(store.size() - from), true}; };
  for (const Op& op : ops_) {
    try {
      auto fname = [&op] { return std::to_string(op.field); };
      auto field_error = [&](const std::string& what) {
        return DbError(err::kUpdateField, "update: field " + fname() + " " + op_name(op.op) + ": " + what);
      };
      const int64_t size = int64_t(fields.size());
      // Tarantool: '!' may name the field after the last (or -1 for it: append); '=' on the
      // field after the last appends; other ops need an existing field.
      const bool append_set = op.op == '=' && op.field > 0 && op.field - 1 == size;
      const int64_t max = op.op == '!' || append_set ? size + 1 : size;
      int64_t idx = op.field > 0 ? int64_t(op.field) - 1 : int64_t(op.field) + max;
      if (idx < 0 || idx >= max)
        throw DbError(err::kUpdateField, "update: field " + fname() + " was not found in the tuple (" +
                                             std::to_string(size) + " fields)");
      const Field arg{op.arg, 0, uint32_t(op.arg_end - op.arg), false};
      switch (op.op) {
        case '=':
          if (idx == size) fields.push_back(arg);
          else fields[size_t(idx)] = arg;
          break;
        case '!':
          fields.insert(fields.begin() + idx, arg);
          break;
        case '#': {
          uint64_t n;
          read_uint(op.arg, &n);
          const int64_t end = std::min<int64_t>(size, idx + int64_t(n));
          fields.erase(fields.begin() + idx, fields.begin() + end);
          break;
        }
        case '+': case '-': {
          mp::Num a, b;
          if (!mp::read_num(bytes(fields[size_t(idx)]), &a)) throw field_error("the field is not a number");
          mp::read_num(op.arg, &b);
          const size_t from = store.size();
          __int128 x, y;
          if (!exact_integer(a, &x) || !exact_integer(b, &y)) {
            const double dx = mp::num_to_double(a), dy = mp::num_to_double(b);
            write_float64(&store, op.op == '+' ? dx + dy : dx - dy);
          } else {
            const __int128 r = op.op == '+' ? x + y : x - y;
            if (r < -(__int128(1) << 63) || r >= (__int128(1) << 64))
              throw DbError(err::kUpdateIntegerOverflow, "update: integer overflow when performing " +
                                                             op_name(op.op) + " on field " + fname());
            write_integer(&store, r);
          }
          fields[size_t(idx)] = owned(from);
          break;
        }
        case '&': case '|': case '^': {
          uint64_t a, b;
          if (!read_uint(bytes(fields[size_t(idx)]), &a))
            throw field_error("the field is not a non-negative integer");
          read_uint(op.arg, &b);
          const size_t from = store.size();
          write_integer(&store, __int128(op.op == '&' ? a & b : op.op == '|' ? a | b : a ^ b));
          fields[size_t(idx)] = owned(from);
          break;
        }
        case ':': {
          const uint8_t* f = bytes(fields[size_t(idx)]);
          uint32_t slen = 0;
          const uint8_t* s = mp::read_str(f, &slen);
          if (s == nullptr)
            throw field_error("the field is not a string");
          int64_t pos = 0;
          read_int(op.arg, &pos);
          const int64_t n = slen;
          // Tarantool's splice: a 1-based position (negative from the end, -1 after the last
          // byte), clamped to the end; a negative length counts from the end.
          // No negation of pos or of the length: either may be INT64_MIN.
          if (pos < 0) {
            if (pos < -(n + 1)) throw field_error("SPLICE: offset is out of bound");
            pos = pos + n + 1;
          } else if (pos == 0) {
            throw field_error("SPLICE: offset is out of bound");
          } else {
            pos = std::min<int64_t>(pos - 1, n);
          }
          int64_t cut = op.len;
          if (cut < 0) cut = cut < -(n - pos) ? 0 : cut + n - pos;
          else if (cut > n - pos) cut = n - pos;
          const size_t total = size_t(n - cut) + op.str_len;
          if (total > UINT32_MAX) throw field_error("the result is too long");
          // Built apart, then stored in place of the old value (replace_owned).
          std::string& out_str = splice_;
          out_str.clear();
          write_str_header(&out_str, total);
          out_str.append(reinterpret_cast<const char*>(s), size_t(pos));
          out_str.append(reinterpret_cast<const char*>(op.str), op.str_len);
          out_str.append(reinterpret_cast<const char*>(s) + pos + cut, size_t(n - pos - cut));
          fields[size_t(idx)] = replace_owned(fields[size_t(idx)], out_str);
          break;
        }
        default: break;
      }
    } catch (const DbError&) {
      if (!skip_failed) throw;
    }
  }
  out->clear();
  mp::write_array_header(out, uint32_t(fields.size()));
  for (const Field& f : fields) out->append(reinterpret_cast<const char*>(bytes(f)), f.n);
}

// --- Space::update and Space::upsert (declared in space.h) ---

Tuple* Space::replace_updated(Tuple* old, const std::string& bytes, bool skip_pk_change) {
  const uint8_t* nb = reinterpret_cast<const uint8_t*>(bytes.data());
  check_tuple(nb, bytes.size(), false);
  const Index& pk = *indexes_[0];
  if (pk.key_def().compare(old->data(), nb) != 0) {
    if (skip_pk_change) return nullptr;
    throw DbError(err::kCantUpdatePrimaryKey, "update: attempt to modify a tuple field which is part of primary "
                                              "index '" + pk.name() + "' in space '" + name_ + "'");
  }
  Tuple* t = arena_.alloc(uint32_t(bytes.size()));
  std::memcpy(t->data(), nb, bytes.size());
  try {
    // Only a unique index whose key changed can meet a duplicate; in the others the new tuple
    // takes the old one's place under an equal key.
    prepared_.resize(indexes_.size());
    for (size_t i = 0; i < indexes_.size(); i++) {
      const Index& idx = *indexes_[i];
      prepared_[i] = idx.prepare(t->data());
      if (i == 0 || !idx.unique() || idx.key_def().compare(old->data(), t->data()) == 0) continue;
      Tuple* dup = idx.find_dup(t, prepared_[i]);
      if (dup != nullptr && dup != old)
        throw DbError(err::kDuplicateKey,
                      "Duplicate key exists in unique index '" + idx.name() + "' in space '" + name_ + "'");
    }
    store(old, t, prepared_.data(), indexes_.size());
  } catch (...) {
    free_tuple(t);
    throw;
  }
  return t;
}

Tuple* Space::update(uint32_t index_id, const uint8_t* key, size_t key_size, const uint8_t* ops, size_t ops_size) {
  clear_evicted();
  Index& idx = index(index_id);
  const uint8_t* first;
  const uint32_t parts = check_key(idx, key, key_size, &first);
  if (!idx.unique())
    throw DbError(err::kUnsupported, "update() needs a unique index; '" + idx.name() + "' is not unique");
  if (parts != idx.key_def().part_count())
    throw DbError(err::kKeyPartCount, "update() on index '" + idx.name() + "' needs a full key (" +
                                          std::to_string(idx.key_def().part_count()) + " parts), got " +
                                          std::to_string(parts));
  const ScratchTrim trim(this);
  update_ops_.parse(ops, ops_size);
  Tuple* old = idx.get(first);
  if (old == nullptr) return nullptr;
  update_ops_.apply(old->data(), &update_new_, false);
  check_size(update_new_.size());
  return replace_updated(old, update_new_, false);
}

void Space::trim_update_scratch() noexcept {
  update_ops_.trim(kKeptScratch);
  if (update_new_.capacity() > kKeptScratch) std::string().swap(update_new_);
}

Tuple* Space::upsert(const uint8_t* data, size_t size, const uint8_t* ops, size_t ops_size) {
  clear_evicted();
  require_primary();
  const ScratchTrim trim(this);
  update_ops_.parse(ops, ops_size);
  check_size(size);
  // Copy first, validate the copy (as insert() does).
  Tuple* t = arena_.alloc(uint32_t(size));
  if (size > 0) std::memcpy(t->data(), data, size);  // an empty Buffer may have no data pointer
  Tuple* old;
  uint64_t pk_prepared;
  try {
    check_tuple(t->data(), size, false);
    pk_prepared = indexes_[0]->prepare(t->data());
    old = indexes_[0]->find_dup(t, pk_prepared);
    if (old == nullptr) {
      insert_tuple(t, false, pk_prepared);
      return t;
    }
  } catch (...) {
    free_tuple(t);
    throw;
  }
  free_tuple(t);
  // Tarantool (memtx): an op that fails on the stored tuple is skipped; a result that changes
  // the primary key is skipped as a whole; a result that breaks an index or a unique key throws.
  update_ops_.apply(old->data(), &update_new_, true);
  check_size(update_new_.size());
  return replace_updated(old, update_new_, true);
}

}  // namespace ce
