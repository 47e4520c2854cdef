// exports.testing: arms the engine's allocation-failure injection (alloc/fault.h) from
// JavaScript, so that vitest can fail every allocation of an operation in turn against the
// normal addon.
//
//   failAllocationAfter(n)     n >= 0: the (n + 1)th allocation the engine makes from now on, on
//                              this thread, throws (a JavaScript call then fails with
//                              ER_MEMORY_ISSUE); n < 0 disarms. Resets allocationsSince().
//   allocationsSince()         allocations the engine made since failAllocationAfter(), while armed
//                              (the failing one included).
//   disarmAllocationFailure()  disarms; returns whether the armed failure happened.
#include "testing.h"

#include <cmath>

#include "alloc/fault.h"
#include "safe.h"

namespace ce {
namespace {

napi_value fail_allocation_after(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    const double n = args.number(0, "n");
    if (std::isnan(n) || (n >= 0 && std::trunc(n) != n)) throw bad_arg("n", "an integer");
    fault::arm(n < 0 ? -1 : n >= 9.0e18 ? INT64_MAX : int64_t(n));
    return nullptr;
  });
}

napi_value allocations_since(napi_env env, napi_callback_info) {
  return guard(env, [&]() -> napi_value { return number_value(env, double(fault::passed())); });
}

napi_value disarm_allocation_failure(napi_env env, napi_callback_info) {
  return guard(env, [&]() -> napi_value {
    napi_value v;
    check(napi_get_boolean(env, fault::disarm(), &v));
    return v;
  });
}

}  // namespace

void register_testing(napi_env env, napi_value exports, AddonData* data) {
  napi_value testing;
  check(napi_create_object(env, &testing));
  const napi_property_descriptor fns[] = {
      method("failAllocationAfter", fail_allocation_after, data),
      method("allocationsSince", allocations_since, data),
      method("disarmAllocationFailure", disarm_allocation_failure, data),
  };
  check(napi_define_properties(env, testing, sizeof fns / sizeof fns[0], fns));
  const napi_property_descriptor prop{"testing", nullptr, nullptr, nullptr, nullptr, testing, napi_default_jsproperty,
                                      nullptr};
  check(napi_define_properties(env, exports, 1, &prop));
}

}  // namespace ce
