// Checked N-API: the helpers every binding function goes through (after better-sqlite3's Safe*).
//
// The binding is plain N-API (node_api.h), no node-addon-api. Every napi_* status is checked,
// and a failure never aborts the process: it becomes a C++ exception (NapiFailure, DbError),
// which guard() turns into a thrown JavaScript error when JavaScript can still run, and drops
// quietly when it cannot (a worker being terminated, the process exiting, an exception already
// pending: throw_js). No C++ exception crosses into N-API: every callback runs its body in
// guard().
//
// Rules the binding functions follow, so that user code cannot pull the space from under them:
//   - read and convert every argument first (the conversions here run no user code: no valueOf,
//     no getters; only createIndex reads array elements, which may run a getter), then look the
//     space up and check it was not dropped, then make one engine call, then build the result;
//   - build results without [[Set]] on objects whose prototype the user controls: numbers,
//     strings, Buffers, null/undefined, or writes into a caller's typed array;
//   - bytes the engine reads after the call began are copied out of the caller's memory (a key
//     or a position list may live in a SharedArrayBuffer that another thread changes).
//
// Ownership: AddonData is the per-environment (per worker thread) state. It is owned jointly by
// the environment's instance data and by every live space and cursor handle (`holders`): the
// last of their finalizers to run frees it, so it does not matter in which order the
// environment's teardown finalizes them.
#pragma once

#include <node_api.h>

#include <cmath>
#include <cstring>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <unordered_set>
#include <vector>

#include "errors.h"
#include "tuple.h"

namespace ce {

class SpaceObject;
class CursorObject;

// A failed N-API status, thrown inside guard().
struct NapiFailure {
  napi_status status;
};

inline void check(napi_status status) {
  if (status != napi_ok) throw NapiFailure{status};
}

struct AddonData {
  napi_ref error_ctor = nullptr;   // setErrorClass(): the CappedError constructor
  napi_ref cursor_ctor = nullptr;  // the CursorHandle class
  // The live handles: a handle from JavaScript is trusted only if it is one of these.
  std::unordered_set<SpaceObject*> spaces;
  std::unordered_set<CursorObject*> cursors;
  // The last space handle a call accepted: a call with the same handle skips the look-up in
  // `spaces` (about 15 ns). Always a member of `spaces` or null: finalize clears it first.
  SpaceObject* last_space = nullptr;
  size_t holders = 1;  // the instance data plus each registered space and cursor
};

// Drops one hold on `data`; the last one frees it.
inline void release(AddonData* data) {
  if (--data->holders == 0) delete data;
}

// Throws a CappedError (or, before setErrorClass, an Error with a `code`). When JavaScript can
// no longer run, or an exception is already pending (a getter threw, an earlier error), the new
// error is dropped: the pending one wins, or nobody is left to catch it.
inline void throw_js(napi_env env, const char* code, const char* message) noexcept {
  bool pending = false;
  if (napi_is_exception_pending(env, &pending) != napi_ok || pending) return;
  napi_value msg = nullptr, code_value = nullptr, error = nullptr;
  if (napi_create_string_utf8(env, message, NAPI_AUTO_LENGTH, &msg) != napi_ok ||
      napi_create_string_utf8(env, code, NAPI_AUTO_LENGTH, &code_value) != napi_ok)
    return;
  void* raw = nullptr;
  AddonData* data = napi_get_instance_data(env, &raw) == napi_ok ? static_cast<AddonData*>(raw) : nullptr;
  if (data != nullptr && data->error_ctor != nullptr) {
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

// Runs a callback's body; every C++ exception becomes a JavaScript error (or is dropped, see
// throw_js). Returns the body's result, or nullptr (undefined) after an error.
template <class F>
napi_value guard(napi_env env, F&& body) noexcept {
  try {
    return body();
  } catch (const DbError& e) {
    throw_js(env, e.code(), e.what());
  } catch (const NapiFailure&) {
    throw_js(env, "ER_INTERNAL", "A Node-API call failed");
  } catch (const std::bad_alloc&) {
    throw_js(env, err::kMemory, "Out of memory");
  } catch (const std::exception& e) {
    throw_js(env, "ER_INTERNAL", e.what());
  } catch (...) {
    throw_js(env, "ER_INTERNAL", "Unknown native error");
  }
  return nullptr;
}

// Conversions run now, their errors thrown later: a function converts every argument before it
// looks the space up, yet reports errors in the order callers have always seen (a dropped space
// first, then the index argument and ER_NO_SUCH_INDEX, then the other arguments in order).
// Only DbError is deferred; a failed N-API call (an exception a getter threw, say) is not.
class Deferred {
 public:
  template <class F>
  auto operator()(F&& convert) -> decltype(convert()) {
    try {
      return convert();
    } catch (const DbError& e) {
      if (!error_) error_.emplace(e);
      return decltype(convert())();
    }
  }
  void rethrow() const {
    if (error_) throw *error_;
  }

 private:
  std::optional<DbError> error_;  // the first error; empty (nothing built) on the common path
};

inline DbError bad_arg(const char* what, const char* expected) {
  return DbError(err::kIllegalParams, std::string("Native argument '") + what + "' must be " + expected);
}

// The arguments of a call, minus the first `skip` (the space handle of module-level functions).
// Missing arguments read as undefined. `data` is the AddonData the function was registered with.
class Args {
 public:
  static constexpr size_t kMax = 10;

  Args(napi_env env, napi_callback_info info, size_t skip) : env_(env), skip_(skip) {
    size_t argc = kMax;
    void* data = nullptr;
    check(napi_get_cb_info(env, info, &argc, argv_, &this_, &data));
    argc_ = argc;
    data_ = static_cast<AddonData*>(data);
  }

  napi_env env() const { return env_; }
  AddonData* data() const { return data_; }
  napi_value self() const { return this_; }
  size_t length() const { return argc_ > skip_ ? argc_ - skip_ : 0; }
  // The raw argument i, counting the skipped ones.
  napi_value raw(size_t i) const { return argv_[i]; }
  napi_value operator[](size_t i) const { return argv_[i + skip_]; }

  napi_valuetype type(size_t i) const {
    napi_valuetype t = napi_undefined;
    if (i >= length()) return napi_undefined;
    check(napi_typeof(env_, (*this)[i], &t));
    return t;
  }
  bool is_undefined(size_t i) const { return type(i) == napi_undefined; }

  // The converters refuse a wrong JavaScript type with ER_ILLEGAL_PARAMS; none of them coerces
  // (no valueOf, no toString), so none runs user code.
  double number(size_t i, const char* what) const {
    double d = 0;
    const napi_status s = i < length() ? napi_get_value_double(env_, (*this)[i], &d) : napi_number_expected;
    if (s == napi_number_expected) throw bad_arg(what, "a number");
    check(s);
    return d;
  }

  uint32_t u32(size_t i, const char* what) const {
    const double d = number(i, what);
    if (!(d >= 0 && d <= 4294967295.0) || std::trunc(d) != d) throw bad_arg(what, "an integer in [0, 2^32)");
    return uint32_t(d);
  }

  // A count that may be Infinity (limits): saturates at UINT64 range.
  uint64_t count(size_t i, const char* what) const {
    const double d = number(i, what);
    if (std::isnan(d) || d < 0 || (std::isfinite(d) && std::trunc(d) != d))
      throw bad_arg(what, "a non-negative integer or Infinity");
    return d >= 1.8e19 ? UINT64_MAX : uint64_t(d);
  }

  bool boolean(size_t i, const char* what) const {
    bool b = false;
    const napi_status s = i < length() ? napi_get_value_bool(env_, (*this)[i], &b) : napi_boolean_expected;
    if (s == napi_boolean_expected) throw bad_arg(what, "a boolean");
    check(s);
    return b;
  }

  std::string string(size_t i, const char* what) const {
    if (i >= length()) throw bad_arg(what, "a string");
    return string_value(env_, (*this)[i], what);
  }

  // A Buffer (any ArrayBufferView): its bytes, read in place. No user code runs.
  bool bytes_if(size_t i, const uint8_t** data, size_t* size) const {
    if (i >= length()) return false;
    void* d = nullptr;
    size_t n = 0;
    if (napi_get_buffer_info(env_, (*this)[i], &d, &n) != napi_ok) return false;
    *data = static_cast<const uint8_t*>(d);
    *size = n;
    return true;
  }

  // A typed array of `type` with at least `min` elements: its elements, in place.
  void* typed_array(size_t i, napi_typedarray_type type, size_t min, size_t* length, const char* what,
                    const char* expected) const {
    napi_typedarray_type t;
    size_t n = 0;
    void* data = nullptr;
    if (i >= this->length() ||
        napi_get_typedarray_info(env_, (*this)[i], &t, &n, &data, nullptr, nullptr) != napi_ok || t != type ||
        n < min || (n > 0 && data == nullptr))
      throw bad_arg(what, expected);
    if (length != nullptr) *length = n;
    return data;
  }

  static std::string string_value(napi_env env, napi_value v, const char* what) {
    char stack[128];
    size_t n = 0;
    const napi_status s = napi_get_value_string_utf8(env, v, stack, sizeof stack, &n);
    if (s == napi_string_expected) throw bad_arg(what, "a string");
    check(s);
    // Complete unless it came within 4 bytes of the end: N-API cuts before a character that
    // does not fit (up to 4 bytes of UTF-8), so a string cut short leaves n >= sizeof stack - 4.
    if (n + 4 < sizeof stack) return std::string(stack, n);
    check(napi_get_value_string_utf8(env, v, nullptr, 0, &n));
    std::string out(n + 1, '\0');
    check(napi_get_value_string_utf8(env, v, &out[0], n + 1, &n));
    out.resize(n);
    return out;
  }

 private:
  napi_env env_;
  size_t skip_;
  size_t argc_ = 0;
  napi_value argv_[kMax] = {};
  napi_value this_ = nullptr;
  AddonData* data_ = nullptr;
};

// The caller's Float64Array of results (expireChunk's and friends' `out`, memory()'s).
class OutArray {
 public:
  OutArray() = default;
  OutArray(const Args& args, size_t i, size_t n, const char* expected)
      : data_(static_cast<double*>(args.typed_array(i, napi_float64_array, n, nullptr, "out", expected))) {}
  void write(std::initializer_list<double> values) {
    size_t k = 0;
    for (double v : values) data_[k++] = v;
  }

 private:
  double* data_ = nullptr;
};

inline napi_value number_value(napi_env env, double d) {
  napi_value v;
  check(napi_create_double(env, d, &v));
  return v;
}

inline napi_value null_value(napi_env env) {
  napi_value v;
  check(napi_get_null(env, &v));
  return v;
}

inline napi_value string_value(napi_env env, const std::string& s) {
  napi_value v;
  check(napi_create_string_utf8(env, s.data(), s.size(), &v));
  return v;
}

// Writes bytes into the scratch Buffer at args[i] when they fit and returns the count; else
// returns a new Buffer holding a copy.
inline napi_value emit(const Args& args, size_t i, const uint8_t* data, size_t size) {
  const uint8_t* scratch;
  size_t room;
  if (args.bytes_if(i, &scratch, &room) && size <= room) {
    if (size > 0) std::memcpy(const_cast<uint8_t*>(scratch), data, size);
    return number_value(args.env(), double(size));
  }
  napi_value buffer;
  check(napi_create_buffer_copy(args.env(), size, data, nullptr, &buffer));
  return buffer;
}

inline napi_value emit(const Args& args, size_t i, const std::string& bytes) {
  return emit(args, i, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

inline napi_value emit_tuple(const Args& args, size_t i, const Tuple* t) {
  if (t == nullptr) return null_value(args.env());
  return emit(args, i, t->data(), t->size);
}

// A function property for napi_define_properties (which defines, never [[Set]]s: a setter the
// user put on Object.prototype is not run).
inline napi_property_descriptor method(const char* name, napi_callback cb, void* data,
                                       napi_property_attributes attributes = napi_default_jsproperty) {
  return napi_property_descriptor{name, nullptr, cb, nullptr, nullptr, nullptr, attributes, data};
}

}  // namespace ce
