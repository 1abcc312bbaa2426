// Helpers shared by the kernels of the nn family (activations, losses,
// norms): dtype rules and running a call into a fresh tensor or an out=.
#pragma once

#include <ATen/ATen.h>

#include <optional>
#include <string>

#include "aten/runtime/op_call.h"

namespace torchtpu::aten::nn {

// The hlo dtype of a torch dtype as an attribute value.
int64_t H(c10::ScalarType t);
// PyTorch's opmath type: bf16/f16 compute in f32.
c10::ScalarType AccType(c10::ScalarType t);
// Raises PyTorch's CPU error for a non-floating input ("\"name\" not implemented for 'Long'").
void CheckFloating(const at::Tensor& t, const char* name);
// Reduction enum of the losses (at::Reduction): 0 none, 1 mean, 2 sum.
void CheckReduction(int64_t reduction);

// Runs a one-result call into `out` (resized to the result) or returns a fresh tensor.
at::Tensor RunOut(OpCall& call, const at::Tensor* out);
// Copies a fresh result into an out= tensor (resizing it), returning out.
at::Tensor& CopyOut(const at::Tensor& result, at::Tensor& out);
// The i-th result of a call, or an undefined tensor where `keep` is false
// (the backward kernels' output_mask).
inline at::Tensor MaybeUndefined(bool keep, const at::Tensor& t) { return keep ? t : at::Tensor(); }

// Registration of the nn files, called by RegisterNN (nn.cpp).
void RegisterActivations();
void RegisterLosses();
void RegisterNorms();
void RegisterEmbedding();
void RegisterAttention();
void RegisterFusedOptimizers();

}  // namespace torchtpu::aten::nn
