// SpaceObject: what a JavaScript space handle points to.
//
// The handle is an External (createSpace() makes it) passed as the first argument of module-level
// functions, one per method; an ObjectWrap would cost a private-property look-up (napi_unwrap,
// about 800 instructions) on every call. A handle is trusted only if it is in the environment's
// registry of live spaces (AddonData::spaces), so a foreign External is refused, not followed.
//
// Ownership: it owns the Space through a unique_ptr. drop() frees it at once; otherwise the
// External's finalizer does when the handle is garbage-collected, or when its environment (a
// worker thread) shuts down. After drop() every method throws ER_SPACE_DROPPED. Cursor handles
// keep a reference to the External, so a space outlives the cursors created from it.
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

#include <napi.h>

#include <memory>
#include <string>

#include "space.h"

namespace ce {

class Args;

class SpaceObject {
 public:
  // Adds createSpace() and the methods (as functions of the handle) to the exports.
  static void Register(Napi::Env env, Napi::Object exports);
  SpaceObject(std::string name, uint32_t max_tuple_size);

  Space& space();  // throws ER_SPACE_DROPPED

  Napi::Value handle() const { return handle_.Value(); }

 private:
  static Napi::Value CreateSpace(const Napi::CallbackInfo& info);
  // kChangesMemory: after the call, tell V8 how the space's native memory changed.
  template <Napi::Value (SpaceObject::*Method)(const Args&), bool kChangesMemory = false>
  static Napi::Value Call(const Napi::CallbackInfo& info);
  // V8 is told of native memory (napi_adjust_external_memory) in steps of kReportStep, up to
  // kReportCap a space, so that its garbage-collection heuristics see what a space costs; the
  // last figure told is reported_.
  static constexpr int64_t kReportStep = 1 << 20;
  static constexpr int64_t kReportCap = int64_t(16) << 20;
  void report_memory(napi_env env);

  Napi::Value CreateIndex(const Args& info);
  Napi::Value Insert(const Args& info);
  Napi::Value InsertMany(const Args& info);
  Napi::Value Get(const Args& info);
  Napi::Value Delete(const Args& info);
  Napi::Value Select(const Args& info);
  Napi::Value Count(const Args& info);
  Napi::Value MinMax(const Args& info);
  Napi::Value Len(const Args& info);
  Napi::Value Memory(const Args& info);
  Napi::Value Truncate(const Args& info);
  Napi::Value Drop(const Args& info);
  Napi::Value Begin(const Args& info);
  Napi::Value Commit(const Args& info);
  Napi::Value Rollback(const Args& info);
  Napi::Value NewCursor(const Args& info);
  Napi::Value ExpireChunk(const Args& info);
  Napi::Value RollbackChunk(const Args& info);
  Napi::Value ScanChunk(const Args& info);
  Napi::Value DeleteVisited(const Args& info);
  Napi::Value CheckIntegrity(const Args& info);

  std::unique_ptr<Space> space_;
  std::string name_;
  Napi::Reference<Napi::Value> handle_;  // weak: the External that points here
  int64_t reported_ = 0;
};

}  // namespace ce
