// A test-only helper for scripts/memory-gap.ts: glibc's mallinfo2() and malloc_trim(0) for Node.
// Not part of the addon; the script compiles it on the fly.
#include <malloc.h>
#include <node_api.h>

static napi_value num(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

static napi_value info(napi_env env, napi_callback_info cb) {
  (void)cb;
  struct mallinfo2 m = mallinfo2();
  napi_value o;
  napi_create_object(env, &o);
  napi_set_named_property(env, o, "arena", num(env, (double)m.arena));
  napi_set_named_property(env, o, "fordblks", num(env, (double)m.fordblks));
  napi_set_named_property(env, o, "uordblks", num(env, (double)m.uordblks));
  napi_set_named_property(env, o, "hblkhd", num(env, (double)m.hblkhd));
  napi_set_named_property(env, o, "keepcost", num(env, (double)m.keepcost));
  return o;
}

static napi_value trim(napi_env env, napi_callback_info cb) {
  (void)cb;
  return num(env, malloc_trim(0));
}

NAPI_MODULE_INIT() {
  napi_value f;
  napi_create_function(env, "mallinfo", NAPI_AUTO_LENGTH, info, NULL, &f);
  napi_set_named_property(env, exports, "mallinfo", f);
  napi_create_function(env, "trim", NAPI_AUTO_LENGTH, trim, NULL, &f);
  napi_set_named_property(env, exports, "trim", f);
  return exports;
}
