// ATen kernel of embedding_dense_backward (the forward is index_select).
#include <ATen/ATen.h>

#include "aten/kernels/nn_util.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten::nn {
namespace {

at::Tensor EmbeddingBackward(const at::Tensor& grad, const at::Tensor& indices, int64_t num_weights,
                             int64_t padding_idx, bool scale_grad_by_freq) {
  TORCH_CHECK(indices.scalar_type() == c10::kLong || indices.scalar_type() == c10::kInt,
              "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; "
              "but got ", indices.scalar_type(), " instead (while checking arguments for embedding_backward)");
  int64_t dim = grad.dim() == 0 ? 1 : grad.size(-1);
  if (indices.numel() == 0 || num_weights == 0) return at::zeros({num_weights, dim}, grad.options());
  OpCall call("nn.embedding_backward");
  call.Attr(num_weights).Attr(scale_grad_by_freq).Attr(H(AccType(grad.scalar_type())));
  call.In(grad).In(indices).Scalar(padding_idx, c10::kLong);
  return call.Run1();
}
at::Tensor& EmbeddingBackwardOut(const at::Tensor& grad, const at::Tensor& indices, int64_t num_weights,
                                 int64_t padding_idx, bool scale_grad_by_freq, at::Tensor& out) {
  return CopyOut(EmbeddingBackward(grad, indices, num_weights, padding_idx, scale_grad_by_freq), out);
}

}  // namespace

void RegisterEmbedding() {
  Impl("embedding_dense_backward", EmbeddingBackward);
  Impl("embedding_dense_backward.out", EmbeddingBackwardOut);
}

}  // namespace torchtpu::aten::nn
