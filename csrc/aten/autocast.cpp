// (being written)
#include "aten/registry.h"

namespace torchtpu::aten {

void RegisterAutocast() {}

}  // namespace torchtpu::aten
