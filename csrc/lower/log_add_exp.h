// log(exp(x) + exp(y)) of complex values as the CPU computes it, shared by
// the complex logaddexp and logcumsumexp lowerings.
#pragma once

#include "hlo/builder.h"

namespace torchtpu::lower {

// The CPU's complex logaddexp (_log_add_exp_helper in ATen's LogAddExp.h),
// for complex x and y of one type and shape; see log_add_exp.cpp.
hlo::Value ComplexLogAddExp(hlo::Builder& b, hlo::Value x, hlo::Value y);

}  // namespace torchtpu::lower
