// (being written)
#include "aten/registry.h"

namespace torchtpu::aten {

void RegisterNN() {}

}  // namespace torchtpu::aten
