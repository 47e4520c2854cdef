// The registry of index kinds (see index.h): the one place that names every concrete kind.
#pragma once

#include <memory>
#include <string>

#include "index.h"

namespace ce {

struct IndexKind {
  const char* name;
  // Throws ER_ILLEGAL_PARAMS for a spec the kind refuses.
  std::unique_ptr<Index> (*create)(IndexSpec spec);
};

// The kind registered under `name`; throws ER_ILLEGAL_PARAMS "Unknown index type" otherwise.
const IndexKind& find_index_kind(const std::string& name);

}  // namespace ce
