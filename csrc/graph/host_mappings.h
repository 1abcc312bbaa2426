// The process's memory mappings, which loaded executables consume: the XLA
// CPU plugin maps JIT code for every kernel of every program it loads (a
// fused graph can hold hundreds), and Linux caps a process at
// vm.max_map_count mappings (65,530 by default), past which the plugin
// crashes inside a compile. The compile cache watches the count.
#pragma once

#include <cstdint>

namespace torchtpu::graph {

// Mappings of this process now (lines of /proc/self/maps); -1 where unknown.
int64_t CountHostMappings();
// The most mappings a process may have (vm.max_map_count); -1 where unknown.
int64_t MaxHostMappings();

}  // namespace torchtpu::graph
