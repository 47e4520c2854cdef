// The addon's entry: registers the space functions, the cursor class and the error-class hook.
//
// Ownership: the per-environment AddonData (safe.h) is created here and handed to N-API as the
// environment's instance data; every function gets it as its callback data.
#include <node_api.h>

#include "cursor_object.h"
#include "safe.h"
#include "space_object.h"
#include "testing.h"

namespace ce {
namespace {

// setErrorClass(ctor): errors are thrown as `new ctor(message, code)` from then on.
napi_value set_error_class(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    napi_valuetype type = napi_undefined;
    if (args.length() >= 1) check(napi_typeof(env, args[0], &type));
    if (type != napi_function) {
      napi_throw_type_error(env, nullptr, "setErrorClass expects a constructor");
      return nullptr;
    }
    napi_ref ref;
    check(napi_create_reference(env, args[0], 1, &ref));
    if (args.data()->error_ctor != nullptr) napi_delete_reference(env, args.data()->error_ctor);
    args.data()->error_ctor = ref;
    return nullptr;
  });
}

void finalize_data(napi_env env, void* ptr, void*) {
  AddonData* data = static_cast<AddonData*>(ptr);
  if (data->error_ctor != nullptr) napi_delete_reference(env, data->error_ctor);
  if (data->cursor_ctor != nullptr) napi_delete_reference(env, data->cursor_ctor);
  data->error_ctor = data->cursor_ctor = nullptr;
  release(data);
}

napi_value init(napi_env env, napi_value exports) {
  AddonData* data = new (std::nothrow) AddonData();
  if (data == nullptr) return nullptr;
  if (napi_set_instance_data(env, data, finalize_data, nullptr) != napi_ok) {
    delete data;
    return nullptr;
  }
  return guard(env, [&]() -> napi_value {
    SpaceObject::register_functions(env, exports, data);
    CursorObject::register_class(env, exports, data);
    register_testing(env, exports, data);
    const napi_property_descriptor hook = method("setErrorClass", set_error_class, data);
    check(napi_define_properties(env, exports, 1, &hook));
    return exports;
  });
}

}  // namespace
}  // namespace ce

NAPI_MODULE_INIT() { return ce::init(env, exports); }
