#include "index.h"

namespace ce {

const char* iter_type_name(IterType type) {
  static const char* const names[] = {"EQ", "REQ", "ALL", "GE", "GT", "LE", "LT"};
  return names[int(type)];
}

Index::Index(uint32_t id, std::string name, bool unique, KeyDef key_def, KeyDef cmp_def)
    : id_(id), name_(std::move(name)), unique_(unique), key_def_(std::move(key_def)), cmp_def_(std::move(cmp_def)) {}

}  // namespace ce
