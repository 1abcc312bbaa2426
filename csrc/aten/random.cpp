// (being written)
#include "aten/registry.h"

namespace torchtpu::aten {

void RegisterRandom() {}

}  // namespace torchtpu::aten
