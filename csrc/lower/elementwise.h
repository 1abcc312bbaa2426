#pragma once

#include <string>

namespace torchtpu::aten {

// True when an elementwise lowering named `ew.<name>` exists.
bool HasElementwiseLowering(const std::string& name);

}  // namespace torchtpu::aten
