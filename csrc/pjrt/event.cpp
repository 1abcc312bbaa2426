// pjrt::Event: owns one PJRT_Event.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

Event::Event(std::shared_ptr<Plugin> plugin, PJRT_Event* event)
    : plugin_(std::move(plugin)), event_(event) {}

Event::~Event() {
  if (event_ != nullptr && plugin_) internal::DestroyEvent(plugin_->api(), event_);
}

void Event::Await() {
  if (event_ == nullptr) return;  // nothing to wait for
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Event_Await_Args);
  a.event = event_;
  internal::Check(api, api->PJRT_Event_Await(&a), "PJRT_Event_Await");
  auto e = TORCHTPU_PJRT_ARGS(PJRT_Event_Error_Args);
  e.event = event_;
  internal::Check(api, api->PJRT_Event_Error(&e), "PJRT_Event_Error");
}

bool Event::IsReady() const {
  if (event_ == nullptr) return true;
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Event_IsReady_Args);
  a.event = event_;
  internal::Check(api, api->PJRT_Event_IsReady(&a), "PJRT_Event_IsReady");
  return a.is_ready;
}

namespace {
struct OnReadyArg {
  const PJRT_Api* api;
  std::function<void(bool)> fn;
};
void OnReadyTrampoline(PJRT_Error* error, void* user_arg) {
  auto* arg = static_cast<OnReadyArg*>(user_arg);
  bool ok = error == nullptr;
  // The callback owns `error` and must destroy it.
  if (error != nullptr) internal::ConsumeError(arg->api, error, nullptr);
  try {
    arg->fn(ok);
  } catch (...) {
    // A plugin thread cannot take an exception; the awaiting side reports errors.
  }
  delete arg;
}
}  // namespace

void Event::OnReady(std::function<void(bool ok)> fn) {
  if (event_ == nullptr) {
    fn(true);
    return;
  }
  const PJRT_Api* api = plugin_->api();
  auto* arg = new OnReadyArg{api, std::move(fn)};
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Event_OnReady_Args);
  a.event = event_;
  a.callback = &OnReadyTrampoline;
  a.user_arg = arg;
  PJRT_Error* error = api->PJRT_Event_OnReady(&a);
  if (error != nullptr) {
    delete arg;  // not registered: the callback will never run
    internal::Check(api, error, "PJRT_Event_OnReady");
  }
}

}  // namespace torchtpu::pjrt
