// CursorObject: the JavaScript handle of one Cursor (class `CursorHandle` in the binding).
//
// Created by the space's cursor(). Ownership: it owns its Cursor and holds a strong reference
// to the handle of the SpaceObject it came from, so the space (and the Index the cursor points into) cannot be
// collected first; every call checks that the space was not dropped. The Scan it owns
// (expiry/chunk.h) also keeps the cursor state saved at the start of the running expiration
// chunk, restored when the chunk rolls back.
#pragma once

#include <napi.h>

#include <memory>

#include "cursor.h"
#include "expiry/chunk.h"

namespace ce {

class Args;
class SpaceObject;

class CursorObject : public Napi::ObjectWrap<CursorObject> {
 public:
  static Napi::Function Init(Napi::Env env);
  explicit CursorObject(const Napi::CallbackInfo& info);
  static Napi::Object Create(Napi::Env env, SpaceObject* owner, Napi::Value owner_handle, std::unique_ptr<Scan> scan);
  static CursorObject* FromArg(const Args& info, size_t i, SpaceObject* owner);

  Scan& scan();  // throws ER_SPACE_DROPPED

 private:
  Napi::Value Next(const Napi::CallbackInfo& info);
  Napi::Value Reset(const Napi::CallbackInfo& info);
  Napi::Value Restore(const Napi::CallbackInfo& info);

  SpaceObject* owner_ = nullptr;
  Napi::Reference<Napi::Value> owner_ref_;  // strong: keeps the space alive
  std::unique_ptr<Scan> scan_;
};

}  // namespace ce
