// The addon's `testing` object: hooks for tests, never used by the library itself.
#pragma once

#include <node_api.h>

namespace ce {

struct AddonData;

// Defines exports.testing = { failAllocationAfter(n), allocationsSince(), disarmAllocationFailure(),
// floorTuple(id, scratch, wide) }.
void register_testing(napi_env env, napi_value exports, AddonData* data);

}  // namespace ce
