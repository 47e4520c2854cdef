// CursorObject: the JavaScript handle of one Cursor (instances of the class `CursorHandle`).
//
// Created only by the space's cursor(). The handle is an object of the CursorHandle class with
// the CursorObject attached by napi_wrap; a handle is trusted only if the pointer napi_unwrap
// gives is in the environment's registry of live cursors (AddonData::cursors), so a foreign
// object, an object wrapped by another addon, or `new CursorHandle()` is refused with
// ER_ILLEGAL_PARAMS, never followed. It is registered only once it is complete (wrapped, with its
// reference to the space); its finalizer unregisters and frees it. Creating one while the
// environment is being torn down fails cleanly: the error is dropped (safe.h), nothing is left
// registered.
//
// Ownership: it owns its Scan (expiry/chunk.h: the cursor, the position saved at the start of
// the running expiration chunk, and the visited tuples of a predicate chunk) and holds a strong
// reference to the External of the SpaceObject it came from, so that object (and the Index the
// cursor points into, until drop()) outlives it; every call checks that the space was not
// dropped. Its finalizer never touches the SpaceObject (during teardown that may be gone already).
//
// Methods (JavaScript): next(scratch) returns the next tuple as emit() does (safe.h) or null;
// reset(); restore() puts the cursor back where the last chunk or scan began.
#pragma once

#include <node_api.h>

#include <memory>

#include "cursor.h"
#include "expiry/chunk.h"
#include "safe.h"

namespace ce {

class SpaceObject;

class CursorObject {
 public:
  // Defines the CursorHandle class on exports and keeps its constructor in data->cursor_ctor.
  static void register_class(napi_env env, napi_value exports, AddonData* data);
  // A new, registered cursor handle over `scan`; owner_handle is owner's External.
  static napi_value create(napi_env env, AddonData* data, SpaceObject* owner, napi_value owner_handle,
                           std::unique_ptr<Scan> scan);
  // args[i] when it is a live cursor handle of `owner`; else throws ER_ILLEGAL_PARAMS.
  static CursorObject* from_arg(const Args& args, size_t i, const SpaceObject* owner);

  // REQUIRES: inside a call that holds this handle (so the owner is alive).
  Scan& scan();  // throws ER_SPACE_DROPPED
  // Tells V8 of a change in what the scan holds (napi_adjust_external_memory), if any.
  void report_memory(napi_env env);

 private:
  CursorObject(SpaceObject* owner, std::unique_ptr<Scan> scan) : owner_(owner), scan_(std::move(scan)) {}

  static napi_value construct(napi_env env, napi_callback_info info);
  static void finalize(napi_env env, void* self, void* data);
  // The CursorObject of `this`; throws ER_ILLEGAL_PARAMS when it is not a live cursor handle.
  static CursorObject* from_this(const Args& args);
  static napi_value next(napi_env env, napi_callback_info info);
  static napi_value reset(napi_env env, napi_callback_info info);
  static napi_value restore(napi_env env, napi_callback_info info);

  SpaceObject* owner_;
  napi_ref owner_ref_ = nullptr;  // strong: keeps the owner's External alive
  std::unique_ptr<Scan> scan_;
  // What the scan holds (Scan::retained_bytes()) as last told to V8: an iterator dropped
  // unfinished keeps a copy of its last tuple until collected, and V8 collects it sooner when it
  // knows (100k parked pairs() over 20 KB tuples held 650-820 MB of RSS for 20 MB live).
  int64_t reported_ = 0;
};

}  // namespace ce
