// The addon's entry: registers the space functions, the cursor class and the error constructor hook.
#include <napi.h>

#include "cursor_object.h"
#include "napi_util.h"
#include "space_object.h"

namespace {

Napi::Value SetErrorClass(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsFunction()) {
    Napi::TypeError::New(info.Env(), "setErrorClass expects a constructor").ThrowAsJavaScriptException();
    return info.Env().Undefined();
  }
  info.Env().GetInstanceData<ce::AddonData>()->error_ctor = Napi::Persistent(info[0].As<Napi::Function>());
  return info.Env().Undefined();
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  auto* data = new ce::AddonData();
  env.SetInstanceData<ce::AddonData>(data);
  Napi::Function cursor = ce::CursorObject::Init(env);
  data->cursor_ctor = Napi::Persistent(cursor);
  ce::SpaceObject::Register(env, exports);
  exports.Set("CursorHandle", cursor);
  exports.Set("setErrorClass", Napi::Function::New(env, SetErrorClass, "setErrorClass"));
  return exports;
}

}  // namespace

NODE_API_MODULE(capped_expirationd, Init)
