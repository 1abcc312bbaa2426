// ATen kernels of embedding_dense_backward (the forward is index_select) and
// of embedding_bag: _embedding_bag (+ _forward_only), its dense backward and
// its per_sample_weights backward. The bag outputs follow CUDA's layout
// (offset2bag for every index, bag_size per offset, max_indices (bags, dim)
// in max mode), which PyTorch's meta functions assume for non-CPU devices.
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

using Four = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

const char* ModeName(int64_t mode) { return mode == 0 ? "sum" : mode == 1 ? "mean" : "max"; }

void CheckIndexDtype(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.scalar_type() == c10::kLong || t.scalar_type() == c10::kInt, "embedding_bag: expected ", what,
              " to be Long or Int, got ", t.scalar_type());
}

Four EmbeddingBag(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                  bool scale_grad_by_freq, int64_t mode, bool sparse, const std::optional<at::Tensor>& psw_opt,
                  bool include_last_offset, int64_t padding_idx) {
  CheckIndexDtype(indices, "indices");
  CheckIndexDtype(offsets, "offsets");
  TORCH_CHECK(indices.scalar_type() == offsets.scalar_type(), "embedding_bag: expected indices and offsets to have "
              "the same dtype, got ", indices.scalar_type(), " and ", offsets.scalar_type());
  TORCH_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2D tensor, got ", weight.dim(), "D");
  TORCH_CHECK(indices.dim() == 1, "embedding_bag: input has to be a 1D or 2D tensor, got ", indices.dim(), "D");
  TORCH_CHECK(offsets.dim() == 1, "embedding_bag: offsets has to be a 1D tensor, got ", offsets.dim(), "D");
  TORCH_CHECK(c10::isFloatingType(weight.scalar_type()), "embedding_bag: expected weight to be floating point, got ",
              weight.scalar_type());
  TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag: mode has to be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  const at::Tensor psw = psw_opt.has_value() ? *psw_opt : at::Tensor();
  if (psw.defined()) {
    TORCH_CHECK(mode == 0, "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported "
                "for mode='sum' (got mode='", ModeName(mode), "'). Please open a feature request on GitHub.");
    TORCH_CHECK(psw.dim() == 1 && psw.numel() == indices.numel(), "embedding_bag: expected per_sample_weights to "
                "be 1D with as many elements as indices (", indices.numel(), "), got shape ", psw.sizes());
  }
  int64_t bags = offsets.size(0);
  if (include_last_offset) {
    TORCH_CHECK(bags >= 1, "include_last_offset: number of offsets should be at least 1");
    bags -= 1;
  }
  const int64_t dim = weight.size(1), num = indices.numel();
  auto iopt = indices.options();
  at::Tensor max_indices = mode == 2 ? at::full({bags, dim}, -1, iopt) : at::empty({0}, iopt);
  if (num == 0 || bags == 0) {
    // Every bag is empty: zeros (PyTorch's result for an empty bag in every mode).
    return {at::zeros({bags, dim}, weight.options()), at::zeros({num}, iopt), at::zeros({offsets.size(0)}, iopt),
            max_indices};
  }
  if (padding_idx < 0) padding_idx = -1;
  OpCall call("nn.embedding_bag");
  call.Attr(mode).Attr(bags).Attr(padding_idx).Attr(include_last_offset).Attr(psw.defined())
      .Attr(H(AccType(weight.scalar_type())));
  call.In(weight).In(indices).In(offsets);
  if (psw.defined()) call.In(psw.to(weight.scalar_type()));
  auto r = call.Run();
  return {r[0], r[1], r[2], r[3]};
}

Four EmbeddingBagForwardOnly(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                             bool scale_grad_by_freq, int64_t mode, bool sparse,
                             const std::optional<at::Tensor>& psw, bool include_last_offset, int64_t padding_idx) {
  return EmbeddingBag(weight, indices, offsets, scale_grad_by_freq, mode, sparse, psw, include_last_offset,
                      padding_idx);
}

at::Tensor EmbeddingBagDenseBackward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offset2bag,
                                     const at::Tensor& bag_size, const at::Tensor& max_indices, int64_t num_weights,
                                     bool scale_grad_by_freq, int64_t mode,
                                     const std::optional<at::Tensor>& psw_opt, int64_t padding_idx) {
  CheckIndexDtype(indices, "indices");
  TORCH_CHECK(grad.dim() == 2, "embedding_bag_backward: expected grad to be 2D, got ", grad.dim(), "D");
  TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag_backward: unknown mode ", mode);
  const at::Tensor psw = psw_opt.has_value() ? *psw_opt : at::Tensor();
  const int64_t dim = grad.size(1);
  if (num_weights == 0 || grad.size(0) == 0 || (mode != 2 && indices.numel() == 0)) {
    return at::zeros({num_weights, dim}, grad.options());
  }
  TORCH_CHECK(mode != 2 || (max_indices.dim() == 2 && max_indices.size(0) == grad.size(0) &&
                            max_indices.size(1) == dim),
              "embedding_bag_backward: max mode needs max_indices of shape ", grad.sizes(), ", got ",
              max_indices.sizes());
  TORCH_CHECK(mode == 2 || offset2bag.numel() == indices.numel(), "embedding_bag_backward: offset2bag has ",
              offset2bag.numel(), " elements for ", indices.numel(), " indices");
  if (padding_idx < 0) padding_idx = -1;
  OpCall call("nn.embedding_bag_backward");
  call.Attr(mode).Attr(num_weights).Attr(padding_idx).Attr(scale_grad_by_freq).Attr(psw.defined())
      .Attr(H(AccType(grad.scalar_type())));
  call.In(grad).In(indices).In(offset2bag).In(bag_size).In(mode == 2 ? max_indices : indices);
  if (psw.defined()) call.In(psw);
  return call.Run1();
}

at::Tensor EmbeddingBagBackward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                                const at::Tensor& offset2bag, const at::Tensor& bag_size,
                                const at::Tensor& max_indices, int64_t num_weights, bool scale_grad_by_freq,
                                int64_t mode, bool sparse, const std::optional<at::Tensor>& psw,
                                int64_t padding_idx) {
  TORCH_CHECK(!sparse, "embedding_bag: sparse=True gradients are not supported on tpu (sparse tensors have no tpu "
              "kernels); use sparse=False");
  return EmbeddingBagDenseBackward(grad, indices, offset2bag, bag_size, max_indices, num_weights,
                                   scale_grad_by_freq, mode, psw, padding_idx);
}

at::Tensor EmbeddingBagPerSampleWeightsBackward(const at::Tensor& grad, const at::Tensor& weight,
                                                const at::Tensor& indices, const at::Tensor& offsets,
                                                const at::Tensor& offset2bag, int64_t mode, int64_t padding_idx) {
  TORCH_CHECK(mode == 0, "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  TORCH_CHECK(grad.dim() == 2 && weight.dim() == 2 && indices.dim() == 1 && weight.size(1) == grad.size(1),
              "embedding_bag_backward: expected grad (bags, D), weight (rows, D) and 1D indices, got ", grad.sizes(),
              ", ", weight.sizes(), ", ", indices.sizes());
  if (indices.numel() == 0) return at::zeros({0}, grad.options());
  if (padding_idx < 0) padding_idx = -1;
  OpCall call("nn.embedding_bag_psw_backward");
  call.Attr(padding_idx).Attr(H(AccType(grad.scalar_type())));
  call.In(grad).In(weight).In(indices).In(offset2bag);
  return call.Run1();
}

}  // namespace

void RegisterEmbedding() {
  Impl("_embedding_bag", EmbeddingBag);
  Impl("_embedding_bag_forward_only", EmbeddingBagForwardOnly);
  Impl("_embedding_bag_backward", EmbeddingBagBackward);
  Impl("_embedding_bag_dense_backward", EmbeddingBagDenseBackward);
  Impl("_embedding_bag_per_sample_weights_backward", EmbeddingBagPerSampleWeightsBackward);
  Impl("embedding_dense_backward", EmbeddingBackward);
  Impl("embedding_dense_backward.out", EmbeddingBackwardOut);
}

}  // namespace torchtpu::aten::nn
