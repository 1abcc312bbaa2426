// Convolution, pooling and interpolation: the family's registration. Each
// part lives in its own pair of files (kernels, lowering).
#include "aten/kernels/registry.h"

namespace torchtpu::aten {

void RegisterConvolution();  // conv_kernels.cpp
void RegisterPooling();      // pool_kernels.cpp
void RegisterUpsample();     // upsample_kernels.cpp

void RegisterConvPool() {
  RegisterConvolution();
  RegisterPooling();
  RegisterUpsample();
}

}  // namespace torchtpu::aten
