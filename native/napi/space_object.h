// SpaceObject: what a JavaScript space handle points to, and the space's functions.
//
// The handle is an External (createSpace() makes it) passed as the first argument of the
// module-level functions in `space`, one per method; a wrapped object would cost a
// private-property look-up (napi_unwrap) on every call. A handle is trusted only if it is in the
// environment's registry of live spaces (AddonData::spaces), so a foreign External is refused
// with ER_ILLEGAL_PARAMS, never followed (the last handle accepted, AddonData::last_space, is
// remembered, so that a run of calls on one space skips the look-up). The External is an
// argument of the running call, so the SpaceObject cannot be finalized during it; drop() can (a
// user getter may call it), which is why a function reads all its arguments before it takes a
// reference to the Space.
//
// Each function has the same shape: read and convert every argument, then space() (which
// throws ER_SPACE_DROPPED), then one engine call, then build the result (see safe.h).
//
// Ownership: a SpaceObject owns its Space through a unique_ptr. drop() frees the Space at once;
// the SpaceObject itself is freed by the External's finalizer, when the handle is
// garbage-collected or its environment (a worker thread) shuts down. Cursor handles hold a
// strong reference to the External, so a SpaceObject outlives the cursors created from it.
//
// Native memory is reported to V8 (napi_adjust_external_memory) after every call that can change
// it, in 1 MiB steps, up to 16 MiB a space, and withdrawn on drop() or collection, so that V8
// weighs it when it decides to collect garbage: a space that became unreachable without drop()
// is then collected on V8's own schedule. The cap is there because V8 runs a full collection
// for every 64 MB of growth it is told about: reporting all of a 70 MB space made a bulk load of
// 1M tuples pay an extra 100-170 ms mark-compact of the application's heap, while 16 MiB a space
// already gets leaked spaces collected (40 of 27 MB each: 39 collected, 287 MB peak RSS).
// (Node 20's process.memoryUsage().external does not include these figures.)
#pragma once

#include <node_api.h>

#include <memory>
#include <string>

#include "safe.h"
#include "space.h"

namespace ce {

// The `now` of an insert or read (TTL-aware spaces), argument i: a number is the current time in
// the space's TTL unit (an injected clock, or Date.now() when it was replaced); absent or
// undefined means no TTL check (Now()). Anything else throws ER_ILLEGAL_PARAMS. (The reads of a
// space created with a wall clock take absent or undefined as that clock instead, read natively
// as Date.now() reads it: SpaceObject::read_now.)
Now now_arg(const Args& args, size_t i);

class SpaceObject {
 public:
  // Defines createSpace() and `space` (the functions, each taking the handle first) on exports.
  static void register_functions(napi_env env, napi_value exports, AddonData* data);

  // ttl_fieldno: the space's 0-based TTL field, or kNoTtlField; caps: a capped space's (see Space);
  // wall: the unit of the wall clock that the space's reads use by default (a TTL space declared
  // without an injected `now`), or nullptr.
  SpaceObject(std::string name, uint32_t max_tuple_size, uint32_t ttl_fieldno = kNoTtlField, SpaceCaps caps = {},
              const WallClockUnit* wall = nullptr);

  Space& space();  // throws ER_SPACE_DROPPED

  // A read's `now`, argument i: as now_arg(), except that on a space with a default wall clock an
  // absent or undefined argument means that clock (Now::wall, ttl.h: the coarse clock first, the
  // exact one when a TTL is near). A TTL space's read on the wall clock passes nothing, so it
  // crosses N-API exactly as a plain space's read does.
  Now read_now(const Args& args, size_t i) const {
    if (has_wall_ && (i >= args.length() || args.is_undefined(i))) return Now::wall(wall_);
    return now_arg(args, i);
  }

 private:
  static napi_value create_space(napi_env env, napi_callback_info info);
  static void finalize(napi_env env, void* self, void* data);
  // Calls Method on the space whose handle is the first argument; kChangesMemory: afterwards,
  // tell V8 how the space's native memory changed.
  template <napi_value (SpaceObject::*Method)(const Args&), bool kChangesMemory = false>
  static napi_value call(napi_env env, napi_callback_info info);
  // V8 is told of native memory in steps of kReportStep, up to kReportCap a space; the last
  // figure told is reported_.
  static constexpr int64_t kReportStep = 1 << 20;
  static constexpr int64_t kReportCap = int64_t(16) << 20;
  void report_memory(napi_env env);

  napi_value create_index(const Args& args);
  napi_value build_index_begin(const Args& args);
  napi_value build_index_step(const Args& args);
  napi_value insert(const Args& args);
  napi_value insert_many(const Args& args);
  napi_value get(const Args& args);
  napi_value remove(const Args& args);  // delete()
  napi_value select(const Args& args);
  napi_value count(const Args& args);
  napi_value minmax(const Args& args);
  napi_value len(const Args& args);
  napi_value memory(const Args& args);
  napi_value truncate(const Args& args);
  napi_value drop(const Args& args);
  napi_value begin(const Args& args);
  napi_value commit(const Args& args);
  napi_value rollback(const Args& args);
  napi_value cursor(const Args& args);
  napi_value expire_chunk(const Args& args);
  napi_value rollback_chunk(const Args& args);
  napi_value scan_chunk(const Args& args);
  napi_value delete_visited(const Args& args);
  napi_value check_integrity(const Args& args);
  napi_value update(const Args& args);
  napi_value update_number(const Args& args);
  napi_value upsert(const Args& args);
  napi_value bsize(const Args& args);
  napi_value take_evicted(const Args& args);

  std::unique_ptr<Space> space_;
  std::string name_;
  int64_t reported_ = 0;
  bool has_wall_ = false;
  WallClockUnit wall_ = WallClockUnit::kMillis;
};

}  // namespace ce
