// (being written)
#include "aten/registry.h"

namespace torchtpu::aten {

void RegisterConvPool() {}

}  // namespace torchtpu::aten
