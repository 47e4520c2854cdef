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
                                  std::unique_ptr<Cursor> cursor) {
  AddonData* data = env.GetInstanceData<AddonData>();
  Napi::Object obj = data->cursor_ctor.New({});
  CursorObject* self = Napi::ObjectWrap<CursorObject>::Unwrap(obj);
  self->owner_ = owner;
  self->owner_ref_ = Napi::Persistent(owner_handle);
  self->cursor_ = std::move(cursor);
  return obj;
}

CursorObject* CursorObject::FromArg(const Args& info, size_t i, SpaceObject* owner) {
  AddonData* data = info.Env().GetInstanceData<AddonData>();
  if (i >= info.Length() || !info[i].IsObject() ||
      !info[i].As<Napi::Object>().InstanceOf(data->cursor_ctor.Value()))
    throw bad_arg("cursor", "a cursor of this space");
  CursorObject* c = Napi::ObjectWrap<CursorObject>::Unwrap(info[i].As<Napi::Object>());
  if (c == nullptr || c->owner_ != owner || !c->cursor_) throw bad_arg("cursor", "a cursor of this space");
  return c;
}

Cursor& CursorObject::cursor() {
  if (owner_ == nullptr || !cursor_) throw DbError(err::kIllegalParams, "This cursor was not created by a space");
  owner_->space();
  return *cursor_;
}

Napi::Value CursorObject::Next(const Napi::CallbackInfo& cb) {
  const Args info(cb, 0);
  return guard(info.Env(), [&]() -> Napi::Value {
    Cursor& c = cursor();
    Tuple* t = c.next();
    Napi::Value v = emit_tuple(info, 0, t);
    c.detach();
    return v;
  });
}

Napi::Value CursorObject::Reset(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    cursor().reset();
    return info.Env().Undefined();
  });
}

}  // namespace ce

namespace ce {

Napi::Value CursorObject::Restore(const Napi::CallbackInfo& info) {
  return guard(info.Env(), [&]() -> Napi::Value {
    Cursor& c = cursor();
    c.restore(saved_);
    c.detach();
    return info.Env().Undefined();
  });
}

}  // namespace ce
