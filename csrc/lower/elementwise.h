#pragma once

#include <string>

namespace torchtpu::lower {

// True when an elementwise lowering named `ew.<name>` exists.
bool HasElementwiseLowering(const std::string& name);

}  // namespace torchtpu::lower
