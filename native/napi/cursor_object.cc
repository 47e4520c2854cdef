#include "cursor_object.h"

#include "napi_util.h"
#include "space_object.h"

namespace ce {

Napi::Function CursorObject::Init(Napi::Env env) {
  return DefineClass(env, "CursorHandle",
                     {
                         InstanceMethod<&CursorObject::Next>("next"),
                         InstanceMethod<&CursorObject::Reset>("reset"),
                         InstanceMethod<&CursorObject::Restore>("restore"),
                     });
}

CursorObject::CursorObject(const Napi::CallbackInfo& info) : Napi::ObjectWrap<CursorObject>(info) {}

Napi::Object CursorObject::Create(Napi::Env env, SpaceObject* owner, Napi::Value owner_handle,
                                  std::unique_ptr<Scan> scan) {
  AddonData* data = env.GetInstanceData<AddonData>();
  Napi::Object obj = data->cursor_ctor.New({});
  CursorObject* self = Napi::ObjectWrap<CursorObject>::Unwrap(obj);
  self->owner_ = owner;
  self->owner_ref_ = Napi::Persistent(owner_handle);
  self->scan_ = std::move(scan);
  return obj;
}

CursorObject* CursorObject::FromArg(const Args& info, size_t i, SpaceObject* owner) {
  AddonData* data = info.Env().GetInstanceData<AddonData>();
  if (i >= info.Length() || !info[i].IsObject() ||
      !info[i].As<Napi::Object>().InstanceOf(data->cursor_ctor.Value()))
    throw bad_arg("cursor", "a cursor of this space");
  CursorObject* c = Napi::ObjectWrap<CursorObject>::Unwrap(info[i].As<Napi::Object>());
  if (c == nullptr || c->owner_ != owner || !c->scan_) throw bad_arg("cursor", "a cursor of this space");
  return c;
}

Scan& CursorObject::scan() {
  if (owner_ == nullptr || !scan_) throw DbError(err::kIllegalParams, "This cursor was not created by a space");
  owner_->space();
  return *scan_;
}

Napi::Value CursorObject::Next(const Napi::CallbackInfo& cb) {
  const Args info(cb, 0);
  return guard(info.Env(), [&]() -> Napi::Value {
    Cursor& c = scan().cursor();
    Tuple* t = c.next();
    Napi::Value v = emit_tuple(info, 0, t);
    c.detach();
    return v;
  });
}

Napi::Value CursorObject::Reset(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    scan().cursor().reset();
    return info.Env().Undefined();
  });
}

}  // namespace ce

namespace ce {

Napi::Value CursorObject::Restore(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    scan().restore();
    return info.Env().Undefined();
  });
}

}  // namespace ce
