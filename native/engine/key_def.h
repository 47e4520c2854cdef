// KeyDef: the parts of an index key, and everything that reads tuples or keys through them.
//
// A part is a 0-based field number and a type. check_tuple() and check_key() enforce the types
// (unsigned and integer accept only integral values, in range, whatever the encoding; NaN is
// refused everywhere), so comparisons and hashes never meet a value of the wrong type.
//
// Ordering: numbers by value (see mp::compare_num), strings bytewise (shorter first on a common
// prefix), false before true. A key with fewer parts than the definition compares as a prefix.
//
// Hints: hint() maps a tuple's key to 64 bits so that a < b implies hint(a) <= hint(b) and
// a == b implies equal hints. Usually only the first part counts (numbers through double with -0
// folded to 0, strings by their first 8 bytes, booleans as 0/1). The B+tree stores the hint
// beside each tuple pointer and compares hints first, so a search reads tuple bytes only on a
// tie. A non-unique TTL index ties constantly (thousands of tuples share a second), so for two
// numeric parts (a non-unique index on a number, ordered by a numeric primary key) the hint is
// composite: 2 region bits, the first part's integer value in 41 bits (seconds, or milliseconds
// until 2039), then the second part in 21 order-preserving bits: exact for integers in [0, 2^20),
// 15 significant bits up to 2^32, coarser beyond (key_def.cc, composite_low). A non-integral
// first part takes the largest low bits, and a value outside [0, 2^41) falls in a region of its
// own without the second part: both keep the order, and a tie is broken by the tuples.
//
// Hashes: equal keys hash equally whatever their encoding (5 and 5.0 hash alike).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ce {

enum class FieldType : uint8_t { kUnsigned, kInteger, kNumber, kString, kBoolean };

const char* field_type_name(FieldType type);
bool parse_field_type(const std::string& name, FieldType* out);

struct KeyPart {
  uint32_t fieldno;  // 0-based
  FieldType type;
};

class KeyDef {
 public:
  // `composite_hint`: the index may use the two-part hint described above (only when it has
  // exactly two numeric parts).
  KeyDef(std::string index_name, std::vector<KeyPart> parts, bool composite_hint = false);

  const std::vector<KeyPart>& parts() const { return parts_; }
  uint32_t part_count() const { return uint32_t(parts_.size()); }
  const std::string& index_name() const { return index_name_; }
  bool has_field(uint32_t fieldno) const;

  // Throws ER_FIELD_MISSING or ER_FIELD_TYPE unless every part is present with its type.
  // REQUIRES: `tuple` is a validated MessagePack array (mp::check).
  void check_tuple(const uint8_t* tuple) const;
  // `key` is a validated MessagePack array. Throws ER_KEY_PART_COUNT when it has more parts than
  // the definition, ER_KEY_TYPE when a part has the wrong type. Returns the part count.
  uint32_t check_key(const uint8_t* key) const;

  // The comparisons, hints and hashes below REQUIRE tuples that passed check_tuple() and keys
  // that passed check_key() (they do no bounds or type checks).
  int compare(const uint8_t* a, const uint8_t* b) const { return compare_from(a, b, 0); }
  // Compares parts [start, part_count()).
  int compare_from(const uint8_t* a, const uint8_t* b, uint32_t start) const;
  // `key` points at the first part of a checked key with `n` parts.
  int compare_with_key(const uint8_t* tuple, const uint8_t* key, uint32_t n) const;

  uint64_t hint(const uint8_t* tuple) const;
  // On a hint tie, the first part that may still differ: 1 when equal hints prove equal first
  // parts (booleans; numbers whose double magnitude is below 2^53, where every integer is exact
  // and a larger one rounds to a double of magnitude >= 2^53; composite hints of an integral
  // first part), else 0 (strings share a hint on a common 8-byte prefix).
  uint32_t tie_start(uint64_t hint) const;
  // The hints of all entries whose key starts with this key (`key` is the first part of a checked
  // key with n >= 1 parts): every such entry has lo <= hint <= hi.
  void hint_range(const uint8_t* key, uint32_t n, uint64_t* lo, uint64_t* hi) const;

  uint64_t hash(const uint8_t* tuple) const;
  uint64_t hash_key(const uint8_t* key) const;  // a full key, first part

 private:
  std::string index_name_;
  std::vector<KeyPart> parts_;
  bool composite_ = false;
};

// The bytes of one key part value, for error messages: "string", "unsigned", "NaN", ...
std::string describe_value(const uint8_t* value);

}  // namespace ce
