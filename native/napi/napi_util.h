// Helpers shared by the N-API wrappers: argument checks, error conversion, output buffers.
//
// Every wrapper method runs its body through guard(), which turns DbError, std::bad_alloc and
// any other std::exception into a thrown JavaScript error with a `code`, so no C++ exception
// crosses into N-API. Arguments are checked here even though TypeScript checks them first:
// the binding can be reached directly, and a wrong type must never become a crash.
//
// Results leave as MessagePack bytes: copied into the caller's reusable scratch Buffer when they
// fit (the method returns the byte count), or in a new Buffer when they do not.
#pragma once

#include <napi.h>

#include <cmath>
#include <string>
#include <unordered_set>

#include "errors.h"
#include "tuple.h"

namespace ce {

class SpaceObject;

// Per-environment (per worker thread) state of the addon.
struct AddonData {
  Napi::FunctionReference cursor_ctor;
  Napi::FunctionReference error_ctor;
  // The live spaces: a handle from JavaScript is trusted only if it is one of these.
  std::unordered_set<SpaceObject*> spaces;
};

// The arguments of a call, minus the first `skip` (the space handle of module-level functions).
class Args {
 public:
  Args(const Napi::CallbackInfo& info, size_t skip) : info_(info), skip_(skip) {}
  Napi::Env Env() const { return info_.Env(); }
  size_t Length() const { return info_.Length() > skip_ ? info_.Length() - skip_ : 0; }
  Napi::Value operator[](size_t i) const { return info_[i + skip_]; }

 private:
  const Napi::CallbackInfo& info_;
  size_t skip_;
};

// Throws a CappedError (or, before setErrorClass, an Error with a `code`). Plain N-API calls, no
// node-addon-api wrappers: while a worker is being terminated or the process is exiting, no
// JavaScript can run and every throw fails; node-addon-api turns such a failure into a fatal
// error, which would take the whole process down. Here the error is then dropped: nobody is left
// to catch it.
inline void throw_js(Napi::Env env, const char* code, const std::string& message) {
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || pending) return;
  napi_value msg = nullptr, code_value = nullptr, error = nullptr;
  if (napi_create_string_utf8(env, message.data(), message.size(), &msg) != napi_ok ||
      napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value) != napi_ok)
    return;
  AddonData* data = env.GetInstanceData<AddonData>();
  if (data != nullptr && !data->error_ctor.IsEmpty()) {
    napi_value ctor = nullptr;
    napi_value args[2] = {msg, code_value};
    if (napi_get_reference_value(env, data->error_ctor, &ctor) != napi_ok || ctor == nullptr ||
        napi_new_instance(env, ctor, 2, args, &error) != napi_ok)
      error = nullptr;
  }
  if (napi_is_exception_pending(env, &pending) != napi_ok || pending) return;  // the constructor threw
  if (error == nullptr && napi_create_error(env, code_value, msg, &error) != napi_ok) return;  // sets .code
  napi_throw(env, error);  // fails only when JavaScript can no longer run: nothing to do then
}

template <class F>
Napi::Value guard(Napi::Env env, F&& body) {
  try {
    return body();
  } catch (const DbError& e) {
    throw_js(env, e.code(), e.what());
  } catch (const std::bad_alloc&) {
    throw_js(env, err::kMemory, "Out of memory");
  } catch (const std::exception& e) {
    throw_js(env, "ER_INTERNAL", e.what());
  }
  return env.Undefined();
}

inline DbError bad_arg(const char* what, const char* expected) {
  return DbError(err::kIllegalParams, std::string("Native argument '") + what + "' must be " + expected);
}

struct Bytes {
  const uint8_t* data;
  size_t size;
};

// One N-API call checks the type and reads the bytes (it fails, without throwing, on a non-Buffer).
inline bool buffer_info(const Args& info, size_t i, Bytes* out) {
  if (i >= info.Length()) return false;
  void* data = nullptr;
  size_t size = 0;
  if (napi_get_buffer_info(info.Env(), info[i], &data, &size) != napi_ok) return false;
  *out = Bytes{static_cast<const uint8_t*>(data), size};
  return true;
}

inline Bytes arg_bytes(const Args& info, size_t i, const char* what) {
  Bytes b;
  if (!buffer_info(info, i, &b)) throw bad_arg(what, "a Buffer");
  return b;
}

inline double arg_number(const Args& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsNumber()) throw bad_arg(what, "a number");
  return info[i].As<Napi::Number>().DoubleValue();
}

inline uint32_t arg_u32(const Args& info, size_t i, const char* what) {
  const double d = arg_number(info, i, what);
  if (!(d >= 0 && d <= 4294967295.0) || std::trunc(d) != d) throw bad_arg(what, "an integer in [0, 2^32)");
  return uint32_t(d);
}

// A count that may be Infinity (limits): saturates at UINT64 range.
inline uint64_t arg_count(const Args& info, size_t i, const char* what) {
  const double d = arg_number(info, i, what);
  if (std::isnan(d) || d < 0 || (std::isfinite(d) && std::trunc(d) != d))
    throw bad_arg(what, "a non-negative integer or Infinity");
  return d >= 1.8e19 ? UINT64_MAX : uint64_t(d);
}

inline bool arg_bool(const Args& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsBoolean()) throw bad_arg(what, "a boolean");
  return info[i].As<Napi::Boolean>().Value();
}

inline std::string arg_string(const Args& info, size_t i, const char* what) {
  if (i >= info.Length() || !info[i].IsString()) throw bad_arg(what, "a string");
  return info[i].As<Napi::String>().Utf8Value();
}

// Writes bytes into the scratch Buffer at info[i] when they fit; returns the count, else a copy.
inline Napi::Value emit(const Args& info, size_t i, const uint8_t* data, size_t size) {
  Napi::Env env = info.Env();
  Bytes scratch;
  if (buffer_info(info, i, &scratch) && size <= scratch.size) {
    if (size > 0) std::memcpy(const_cast<uint8_t*>(scratch.data), data, size);
    return Napi::Number::New(env, double(size));
  }
  return Napi::Buffer<uint8_t>::Copy(env, data, size);
}

inline Napi::Value emit(const Args& info, size_t i, const std::string& bytes) {
  return emit(info, i, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

inline Napi::Value emit_tuple(const Args& info, size_t i, const Tuple* t) {
  if (t == nullptr) return info.Env().Null();
  return emit(info, i, t->data(), t->size);
}

}  // namespace ce
