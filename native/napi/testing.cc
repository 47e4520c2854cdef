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
//
// And the floor under a read, for bench/space.ts: what any binding call that takes a number and
// returns a tuple through the scratch Buffer pays, with no space behind it.
//
//   floorTuple(id, scratch, wide)  writes the tuple [id, 0] (wide: [id, 'user@tarantool.example',
//                                  1764000000], the shape bench/space.ts stores) into scratch
//                                  through the same Args/guard/emit path as get(); returns its
//                                  byte count. id: an integer in [0, 2^32).
#include "testing.h"

#include <cmath>
#include <cstring>

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

napi_value floor_tuple(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    const uint32_t id = args.u32(0, "id");
    const bool wide = args.boolean(2, "wide");
    uint8_t t[40];
    size_t n = 0;
    t[n++] = wide ? 0x93 : 0x92;
    t[n++] = 0xce;
    for (int s = 24; s >= 0; s -= 8) t[n++] = uint8_t(id >> s);
    if (!wide) {
      t[n++] = 0x00;
    } else {
      static const char kEmail[] = "user@tarantool.example";
      t[n++] = uint8_t(0xa0 | (sizeof kEmail - 1));
      std::memcpy(t + n, kEmail, sizeof kEmail - 1);
      n += sizeof kEmail - 1;
      const uint32_t exp = 1764000000;
      t[n++] = 0xce;
      for (int s = 24; s >= 0; s -= 8) t[n++] = uint8_t(exp >> s);
    }
    return emit(args, 1, t, n);
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
      method("floorTuple", floor_tuple, data),
  };
  check(napi_define_properties(env, testing, sizeof fns / sizeof fns[0], fns));
  const napi_property_descriptor prop{"testing", nullptr, nullptr, nullptr, nullptr, testing, napi_default_jsproperty,
                                      nullptr};
  check(napi_define_properties(env, exports, 1, &prop));
}

}  // namespace ce
