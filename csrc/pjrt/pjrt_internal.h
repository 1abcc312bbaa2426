// Private to csrc/pjrt/*.cpp: helpers shared by the implementation files.
// Includes the PJRT C header, which upper layers never see.
#pragma once

#include <cstring>
#include <string>

#include "pjrt/pjrt.h"
#include "pjrt_c_api.h"

namespace torchtpu::pjrt::internal {

// A zero-filled args struct with struct_size set from the *_STRUCT_SIZE enum.
// Usage: auto a = MakeArgs<PJRT_Buffer_Dimensions_Args>(PJRT_Buffer_Dimensions_Args_STRUCT_SIZE);
template <typename T>
T MakeArgs(size_t struct_size) {
  T args;
  std::memset(&args, 0, sizeof(args));
  args.struct_size = struct_size;
  return args;
}
#define TORCHTPU_PJRT_ARGS(type) ::torchtpu::pjrt::internal::MakeArgs<type>(type##_STRUCT_SIZE)

// Takes ownership of `error`: reads code and message, destroys it. Returns
// kOk and leaves *message alone when error is null.
ErrorCode ConsumeError(const PJRT_Api* api, PJRT_Error* error, std::string* message);

// Throws pjrt::Error("<what>: <message>") if `error` is non-null (always
// destroying it first).
void Check(const PJRT_Api* api, PJRT_Error* error, const char* what);

// Like Check but never throws: returns false (and destroys the error) instead.
// For destructors.
bool CheckNoThrow(const PJRT_Api* api, PJRT_Error* error) noexcept;

// Element type mapping; ToPjrt throws pjrt::Error(kInvalidArgument) for values
// outside the enum, FromPjrt throws pjrt::Error(kUnimplemented) for PJRT types
// we do not model. Never returns PJRT_Buffer_Type_INVALID.
PJRT_Buffer_Type ToPjrt(ElementType type);
ElementType FromPjrt(PJRT_Buffer_Type type);

// Destroys an event, ignoring errors (may be null).
void DestroyEvent(const PJRT_Api* api, PJRT_Event* event) noexcept;

}  // namespace torchtpu::pjrt::internal
