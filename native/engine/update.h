// Update operators: Tarantool's `update`/`upsert` operations over a stored tuple's MessagePack.
//
// Ops are a MessagePack array of arrays, as in Tarantool: [op, field, arg] for `=` `+` `-` `&`
// `|` `^` `!` `#`, and [':', field, position, length, string] for the splice. Field numbers are
// 1-based; a negative one counts from the end (-1 is the last field; for `!` it appends).
// UpdateOps::parse() checks the ops' shape and argument types (ER_UPDATE_OP): those errors are
// thrown by update and by upsert alike. apply() then runs them in order over a tuple and writes
// the new tuple's bytes; an op that does not fit the tuple (no such field, a field of the wrong
// type, an integer overflow, a splice out of bounds) throws ER_UPDATE_FIELD or
// ER_UPDATE_INTEGER_OVERFLOW, or, for upsert (skip_failed), is skipped as Tarantool's memtx does
// (it logs the error and goes on with the next op).
//
// Arithmetic follows Tarantool: integer with integer stays an integer and must fit in
// [-2^63, 2^64) (else ER_UPDATE_INTEGER_OVERFLOW); when either side is a float the result is a
// float64. Bitwise ops need non-negative integers (an integral float64 such as msgpackr writes
// for integers at or above 2^32 counts as one) and give an unsigned integer. The splice works on
// the string's UTF-8 bytes, as Tarantool's does; a result that is not well-formed UTF-8 is then
// refused by the tuple's validation.
//
// The new tuple is not validated here: the space validates it as one of its tuples.
//
// An UpdateOps is reused from call to call (each Space holds one): parse() and apply() keep
// their vectors' and strings' capacity, so an update allocates nothing once warm, and the scratch
// is a member, not a thread_local (whose every access in a shared library is a __tls_get_addr
// call). Not thread-safe: one JavaScript thread uses a space.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ce {

class UpdateOps {
 public:
  // Tarantool's limit on the number of operations in one request (BOX_UPDATE_OP_CNT_MAX).
  static constexpr uint32_t kMaxOps = 4000;

  // `data` is the caller's MessagePack, not yet validated (it is checked here). The ops keep
  // pointers into `data`, which must outlive them.
  void parse(const uint8_t* data, size_t size);
  // Writes the updated copy of `tuple` (a validated MessagePack array) to *out (replacing it).
  void apply(const uint8_t* tuple, std::string* out, bool skip_failed) const;
  size_t size() const { return ops_.size(); }
  // Gives back the scratch's memory when it holds more than `keep` bytes.
  void trim(size_t keep) noexcept;

 private:
  struct Op {
    char op;
    int32_t field;            // as given: 1-based, or negative from the end
    const uint8_t* arg;       // the value (=, !), number (+ - & | ^), count (#) or position (:)
    const uint8_t* arg_end;
    int64_t len = 0;          // ':' length
    const uint8_t* str = nullptr;  // ':' replacement bytes
    uint32_t str_len = 0;
  };
  // A field of the tuple being built: a span of the old tuple or of the ops, or (owned) a span of
  // store_, held by offset because store_ may move as it grows.
  struct Field {
    const uint8_t* p;
    size_t off;
    uint32_t n;
    bool owned;
  };
  // Makes `bytes` the new value of the owned field being replaced (`old`: that field as it was),
  // in store_, and returns the new field. Bounds store_ whatever the number of ops: the old value
  // is dropped in place when it was the last thing stored, and store_ is compacted to the values
  // that fields still hold once what it holds unused outweighs the cost of walking the fields.
  Field replace_owned(const Field& old, const std::string& bytes) const;

  std::vector<Op> ops_;
  mutable std::vector<Field> fields_;  // apply()'s scratch
  mutable std::string store_;
  mutable std::string splice_;   // a splice's result, built before it goes into store_
  mutable std::string compact_;  // store_'s compacted copy
  mutable size_t compact_at_ = 0;  // store_'s size that triggers the next compaction
};

}  // namespace ce
