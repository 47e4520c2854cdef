// SpaceObject: the JavaScript handle of one Space (class `SpaceHandle` in the binding).
//
// Ownership: it owns the Space through a unique_ptr. drop() frees it at once; otherwise the
// handle's finalizer does when the handle is garbage-collected, or when its environment (a
// worker thread) shuts down. After drop() every method throws ER_SPACE_DROPPED. Cursor handles
// keep a reference to their SpaceObject, so a space outlives the cursors created from it.
#pragma once

#include <napi.h>

#include <memory>
#include <string>

#include "space.h"

namespace ce {

class CursorObject;

class SpaceObject : public Napi::ObjectWrap<SpaceObject> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit SpaceObject(const Napi::CallbackInfo& info);

  Space& space();  // throws ER_SPACE_DROPPED

 private:
  Napi::Value CreateIndex(const Napi::CallbackInfo& info);
  Napi::Value Insert(const Napi::CallbackInfo& info);
  Napi::Value InsertMany(const Napi::CallbackInfo& info);
  Napi::Value Get(const Napi::CallbackInfo& info);
  Napi::Value Delete(const Napi::CallbackInfo& info);
  Napi::Value Select(const Napi::CallbackInfo& info);
  Napi::Value Count(const Napi::CallbackInfo& info);
  Napi::Value MinMax(const Napi::CallbackInfo& info);
  Napi::Value Len(const Napi::CallbackInfo& info);
  Napi::Value Memory(const Napi::CallbackInfo& info);
  Napi::Value Truncate(const Napi::CallbackInfo& info);
  Napi::Value Drop(const Napi::CallbackInfo& info);
  Napi::Value Begin(const Napi::CallbackInfo& info);
  Napi::Value Commit(const Napi::CallbackInfo& info);
  Napi::Value Rollback(const Napi::CallbackInfo& info);
  Napi::Value NewCursor(const Napi::CallbackInfo& info);
  Napi::Value ExpireChunk(const Napi::CallbackInfo& info);
  Napi::Value RollbackChunk(const Napi::CallbackInfo& info);
  Napi::Value ScanChunk(const Napi::CallbackInfo& info);
  Napi::Value DeleteVisited(const Napi::CallbackInfo& info);
  Napi::Value CheckIntegrity(const Napi::CallbackInfo& info);

  std::unique_ptr<Space> space_;
  std::string name_;
};

}  // namespace ce
