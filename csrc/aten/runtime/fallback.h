#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torchtpu::aten {

enum class FallbackMode { kAllow, kWarn, kError };  // TORCHTPU_FALLBACK
void SetFallbackMode(FallbackMode mode);
std::map<std::string, int64_t> FallbackStats();  // op name -> calls
void ResetFallbackStats();

}  // namespace torchtpu::aten
