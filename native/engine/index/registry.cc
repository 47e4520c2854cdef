// The index kinds, by the name createIndex() takes. Adding a kind: its own file under index/
// with a factory, and one line in kKinds below.
#include "index/registry.h"

#include "errors.h"
#include "index/hash_index.h"
#include "index/tree_index.h"

namespace ce {

namespace {

const IndexKind kKinds[] = {
    {"TREE", &make_tree_index},
    {"HASH", &make_hash_index},
};

}  // namespace

const IndexKind& find_index_kind(const std::string& name) {
  for (const IndexKind& k : kKinds)
    if (name == k.name) return k;
  throw DbError(err::kIllegalParams, "Unknown index type '" + name + "'");
}

}  // namespace ce
