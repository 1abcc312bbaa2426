// Mapping between PyTorch scalar types and the element types of hlo/ and pjrt/.
#pragma once

#include <c10/core/ScalarType.h>

#include "hlo/types.h"
#include "pjrt/pjrt.h"

namespace torchtpu::aten {

bool IsSupported(c10::ScalarType type);
// Throws a c10::Error naming the dtype when it has no device representation.
hlo::DType ToHlo(c10::ScalarType type);
c10::ScalarType ToTorch(hlo::DType type);
pjrt::ElementType ToPjrt(hlo::DType type);

}  // namespace torchtpu::aten
