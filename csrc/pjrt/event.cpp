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

}  // namespace torchtpu::pjrt
