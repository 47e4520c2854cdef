#include "cursor_object.h"

#include "space_object.h"

namespace ce {

namespace {

CursorObject* lookup(const Args& args, napi_value value) {
  void* ptr = nullptr;
  if (napi_unwrap(args.env(), value, &ptr) != napi_ok) return nullptr;
  CursorObject* c = static_cast<CursorObject*>(ptr);
  return args.data()->cursors.count(c) != 0 ? c : nullptr;
}

}  // namespace

void CursorObject::register_class(napi_env env, napi_value exports, AddonData* data) {
  const napi_property_descriptor methods[] = {
      method("next", next, data, napi_default),
      method("reset", reset, data, napi_default),
      method("restore", restore, data, napi_default),
  };
  napi_value ctor;
  check(napi_define_class(env, "CursorHandle", NAPI_AUTO_LENGTH, construct, data, 3, methods, &ctor));
  check(napi_create_reference(env, ctor, 1, &data->cursor_ctor));
  const napi_property_descriptor prop[] = {
      {"CursorHandle", nullptr, nullptr, nullptr, nullptr, ctor, napi_default_jsproperty, nullptr}};
  check(napi_define_properties(env, exports, 1, prop));
}

// `new CursorHandle()` from JavaScript makes an empty object that no function accepts.
napi_value CursorObject::construct(napi_env env, napi_callback_info info) {
  napi_value self = nullptr;
  if (napi_get_cb_info(env, info, nullptr, nullptr, &self, nullptr) != napi_ok) return nullptr;
  return self;
}

napi_value CursorObject::create(napi_env env, AddonData* data, SpaceObject* owner, napi_value owner_handle,
                                std::unique_ptr<Scan> scan) {
  napi_value ctor = nullptr, obj = nullptr;
  check(napi_get_reference_value(env, data->cursor_ctor, &ctor));
  if (ctor == nullptr) throw NapiFailure{napi_generic_failure};
  check(napi_new_instance(env, ctor, 0, nullptr, &obj));
  std::unique_ptr<CursorObject> self(new CursorObject(owner, std::move(scan)));
  check(napi_create_reference(env, owner_handle, 1, &self->owner_ref_));
  data->holders++;
  const napi_status wrapped = napi_wrap(env, obj, self.get(), finalize, data, nullptr);
  if (wrapped != napi_ok) {
    data->holders--;
    napi_delete_reference(env, self->owner_ref_);
    throw NapiFailure{wrapped};
  }
  // From here the finalizer owns it. If the registry cannot take it (out of memory), the handle
  // is refused by every function and freed by the finalizer.
  data->cursors.insert(self.release());
  return obj;
}

void CursorObject::finalize(napi_env env, void* ptr, void* hint) {
  CursorObject* self = static_cast<CursorObject*>(ptr);
  AddonData* data = static_cast<AddonData*>(hint);
  data->cursors.erase(self);
  if (self->owner_ref_ != nullptr) napi_delete_reference(env, self->owner_ref_);
  self->scan_.reset();
  self->report_memory(env);
  delete self;
  release(data);
}

void CursorObject::report_memory(napi_env env) {
  const int64_t now = scan_ ? int64_t(scan_->retained_bytes()) : 0;
  if (now == reported_) return;
  int64_t total = 0;
  if (napi_adjust_external_memory(env, now - reported_, &total) == napi_ok) reported_ = now;
}

CursorObject* CursorObject::from_arg(const Args& args, size_t i, const SpaceObject* owner) {
  CursorObject* c = i < args.length() ? lookup(args, args[i]) : nullptr;
  if (c == nullptr || c->owner_ != owner) throw bad_arg("cursor", "a cursor of this space");
  return c;
}

CursorObject* CursorObject::from_this(const Args& args) {
  CursorObject* c = lookup(args, args.self());
  if (c == nullptr) throw DbError(err::kIllegalParams, "This cursor was not created by a space");
  return c;
}

Scan& CursorObject::scan() {
  owner_->space();
  return *scan_;
}

// next(scratch, now?): with now (a TTL space's pairs(), see SpaceObject::read_now), skips the
// tuples expired at now.
napi_value CursorObject::next(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    CursorObject* self = from_this(args);
    const Now now = self->owner_->read_now(args, 1);
    Cursor& c = self->scan().cursor();
    Tuple* t = self->owner_->space().next_visible(c, now);
    c.detach();  // before anything can fail: t stays readable until control returns to JavaScript
    self->report_memory(env);
    return emit_tuple(args, 0, t);
  });
}

napi_value CursorObject::reset(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    from_this(args)->scan().cursor().reset();
    return nullptr;
  });
}

napi_value CursorObject::restore(napi_env env, napi_callback_info info) {
  return guard(env, [&]() -> napi_value {
    const Args args(env, info, 0);
    from_this(args)->scan().restore();
    return nullptr;
  });
}

}  // namespace ce
