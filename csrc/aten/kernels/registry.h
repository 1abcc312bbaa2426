// Registering kernels for the PrivateUse1 key at import time, one op at a
// time, so an overload missing from this torch version is reported and
// skipped instead of aborting the import.
#pragma once

#include <torch/library.h>

#include "aten/kernels/dtype_gate.h"

#include <string>
#include <vector>

namespace torchtpu::aten {

torch::Library& AtenLibrary();
std::vector<std::string>& SkippedOps();
// Registers one boxed kernel for each overload name.
template <c10::BoxedKernel::BoxedKernelFunction* fn>
void ImplBoxed(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    try {
      // Through the dtype gate (dtype_gate.h): uint16/32/64 and complex
      // operands reach the kernel only where it is native for them.
      AtenLibrary().impl(name.c_str(), torch::CppFunction::makeFromBoxedFunction<&GatedBoxed<fn>>());
    } catch (const c10::Error&) {
      SkippedOps().push_back(name);
    }
  }
}
template <typename Fn>
void Impl(const std::string& name, Fn fn) {
  try {
    using Sig = typename c10::guts::infer_function_traits_t<Fn>::func_type;
    AtenLibrary().impl(name.c_str(), torch::dispatch(c10::DispatchKey::PrivateUse1, Gated<Sig>::Wrap(name, fn)));
  } catch (const c10::Error&) {
    SkippedOps().push_back(name);
  }
}

// Each op family defines one of these and lists it in registry.cpp.
void RegisterElementwise();
void RegisterReductions();
void RegisterLinalg();
void RegisterShapeOps();
void RegisterIndexing();
void RegisterCreation();
void RegisterRandom();      // random.cpp
void RegisterSort();        // sort.cpp: sort, topk, equal
void RegisterNN();          // nn.cpp: activations, losses, norms and their backward ops
void RegisterConvPool();    // conv_pool.cpp: convolution, pooling, interpolation
void RegisterAutocast();    // autocast.cpp
void RegisterAllOps();

}  // namespace torchtpu::aten
