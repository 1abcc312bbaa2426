// The one place where PJRT_Error* becomes pjrt::Error.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt::internal {

ErrorCode ConsumeError(const PJRT_Api* api, PJRT_Error* error, std::string* message) {
  if (error == nullptr) return ErrorCode::kOk;
  ErrorCode code = ErrorCode::kUnknown;
  {
    auto a = TORCHTPU_PJRT_ARGS(PJRT_Error_GetCode_Args);
    a.error = error;
    PJRT_Error* meta = api->PJRT_Error_GetCode(&a);
    if (meta == nullptr) {
      code = static_cast<ErrorCode>(a.code);
    } else {
      // GetCode itself failed; do not recurse, just free its error.
      auto d = TORCHTPU_PJRT_ARGS(PJRT_Error_Destroy_Args);
      d.error = meta;
      api->PJRT_Error_Destroy(&d);
    }
  }
  if (message != nullptr) {
    auto a = TORCHTPU_PJRT_ARGS(PJRT_Error_Message_Args);
    a.error = error;
    api->PJRT_Error_Message(&a);
    message->assign(a.message ? a.message : "", a.message ? a.message_size : 0);
  }
  auto d = TORCHTPU_PJRT_ARGS(PJRT_Error_Destroy_Args);
  d.error = error;
  api->PJRT_Error_Destroy(&d);
  if (code == ErrorCode::kOk) code = ErrorCode::kUnknown;  // an error object is never OK
  return code;
}

void Check(const PJRT_Api* api, PJRT_Error* error, const char* what) {
  if (error == nullptr) return;
  std::string message;
  ErrorCode code = ConsumeError(api, error, &message);
  throw Error(code, std::string(what) + ": " + message);
}

bool CheckNoThrow(const PJRT_Api* api, PJRT_Error* error) noexcept {
  if (error == nullptr) return true;
  try {
    ConsumeError(api, error, nullptr);
  } catch (...) {
  }
  return false;
}

void DestroyEvent(const PJRT_Api* api, PJRT_Event* event) noexcept {
  if (event == nullptr) return;
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Event_Destroy_Args);
  a.event = event;
  CheckNoThrow(api, api->PJRT_Event_Destroy(&a));
}

}  // namespace torchtpu::pjrt::internal
