// max_unpool2d / max_unpool3d and the margin losses multi_margin_loss and
// multilabel_margin_loss (+ their backward ops) over native ops.
//  * max_unpool: a scatter of the values into zeros at their flat spatial
//    indices (autograd's backward is a gather, composed by PyTorch). Index
//    range checks would need the indices on the host: not done here (an
//    index out of range is dropped by the scatter where the CPU raises).
//  * multi_margin_loss: per sample, sum over j != y of
//    max(0, margin - x[y] + x[j])^p, times weight[y], over C.
//  * multilabel_margin_loss: per sample, the targets are target[0..k) up to
//    the first -1; sum over targets y and non-targets j of
//    max(0, 1 - (x[y] - x[j])), over C. The (N, K, C) hinge matrix is formed
//    at once (K = C).
// The CPU's dtypes: float and double for the losses, the floating types for
// unpooling.
#include <ATen/ATen.h>

#include <string>
#include <tuple>
#include <vector>

#include "aten/kernels/into_out.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

// ---- max_unpool

at::Tensor MaxUnpool(const char* op, const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                     int dims) {
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": elements in indices should be type int64 but got: ",
              indices.scalar_type());
  TORCH_CHECK(static_cast<int>(output_size.size()) == dims, op, ": There should be exactly ", dims,
              " elements (depth, height, width) in output_size, but got ", output_size.size(), " elements.");
  TORCH_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2, op, ": Input to max_unpooling", dims,
              "d should be a ", dims + 1, "d or ", dims + 2, "d Tensor, but got a tensor with ", self.dim(),
              " dimensions.");
  TORCH_CHECK(self.sizes() == indices.sizes(), op, ": Expected shape of indices to be same as that of the input "
              "tensor (", self.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  for (int64_t i = 1; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, op, ": Expected input to have non-zero size for non-batch dimensions, but got ",
                self.sizes(), " with dimension ", i, " being empty.");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(self.scalar_type()), "\"", op, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  const int64_t lead = self.dim() - dims;
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().begin() + lead);
  std::vector<int64_t> flat = shape;
  flat.push_back(-1);
  shape.insert(shape.end(), output_size.begin(), output_size.end());
  at::Tensor out = at::zeros(shape, self.options()).reshape(flat);
  if (self.numel() == 0) return out.reshape(shape);
  return out.scatter_(lead, indices.reshape(flat), self.reshape(flat)).reshape(shape);
}

at::Tensor MaxUnpool2d(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size) {
  return MaxUnpool("max_unpool2d", self, indices, output_size, 2);
}
at::Tensor MaxUnpool3d(const at::Tensor& self, const at::Tensor& indices, c10::IntArrayRef output_size,
                       c10::IntArrayRef stride, c10::IntArrayRef padding) {
  TORCH_CHECK(stride.size() == 3 && padding.size() == 3, "max_unpool3d: There should be exactly three elements "
              "(depth, height, width) in stride and padding, but got: stride ", stride, " padding ", padding);
  TORCH_CHECK(stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "max_unpool3d: strides should be greater than zero, "
              "but got stride: ", stride);
  return MaxUnpool("max_unpool3d", self, indices, output_size, 3);
}

// ---- shared by the losses

void CheckLossDtype(const char* kernel, const at::Tensor& self) {
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(t == c10::kFloat || t == c10::kDouble, "\"", kernel, "\" not implemented for '",
                              c10::toString(t), "'");
}

// Per-sample losses (N) reduced as `reduction` says; 0-dim for 1-D input.
at::Tensor Reduce(const at::Tensor& per_sample, int64_t reduction, bool one_sample) {
  if (reduction == at::Reduction::Mean) return per_sample.mean();
  if (reduction == at::Reduction::Sum) return per_sample.sum();
  return one_sample ? per_sample.squeeze(0) : per_sample;
}

// The per-sample factor of the gradient: grad_output per sample, or the
// scalar (divided by N for the mean), as an (N, 1) column.
at::Tensor GradColumn(const at::Tensor& grad_output, int64_t reduction, int64_t n) {
  if (reduction == at::Reduction::None) return grad_output.reshape({n, 1});
  at::Tensor g = grad_output.reshape({1, 1});
  return reduction == at::Reduction::Mean ? g / static_cast<double>(n) : g;
}

// ---- multi_margin_loss

struct MultiMargin {
  at::Tensor x, y, z, active, w;  // (N,C), (N,1), (N,C), (N,C) bool, (N,1) or undefined
  int64_t n, c;
};

MultiMargin MultiMarginSetup(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                             const c10::optional<at::Tensor>& weight, const at::Scalar& margin) {
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  TORCH_CHECK((self.dim() <= 1 && self.numel() != 0) || (self.dim() == 2 && self.size(1) != 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  MultiMargin m;
  m.x = self.dim() <= 1 ? self.reshape({1, -1}) : self;
  m.n = m.x.size(0);
  m.c = m.x.size(1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == m.n, "inconsistent target size, expected ", m.n, " but got ",
              target.sizes());
  if (weight.has_value() && weight->defined()) {
    TORCH_CHECK(weight->numel() == m.c, "inconsistent weight size, expected ", m.c, " but got ", weight->sizes());
  }
  m.y = target.reshape({m.n, 1});
  at::Tensor xy = m.x.gather(1, m.y);
  m.z = (m.x - xy) + margin.toDouble();  // margin - x[y] + x[j]
  at::Tensor not_target = at::arange(m.c, target.options()).unsqueeze(0) != m.y;
  m.active = (m.z > 0) & not_target;
  if (weight.has_value() && weight->defined()) m.w = weight->to(self.scalar_type()).reshape({-1}).index_select(0, m.y.reshape({-1})).unsqueeze(1);
  return m;
}

at::Tensor MultiMarginLoss(const at::Tensor& self, const at::Tensor& target, const at::Scalar& p,
                           const at::Scalar& margin, const c10::optional<at::Tensor>& weight, int64_t reduction) {
  CheckLossDtype("multi_margin_loss_cpu_kernel", self);
  MultiMargin m = MultiMarginSetup(self, target, p, weight, margin);
  at::Tensor h = p.toLong() == 1 ? m.z : m.z * m.z;
  h = at::where(m.active, h, at::zeros({}, h.options()));
  if (m.w.defined()) h = h * m.w;
  return Reduce(h.sum(1) / static_cast<double>(m.c), reduction, self.dim() <= 1);
}

at::Tensor MultiMarginLossBackward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                   const at::Scalar& p, const at::Scalar& margin,
                                   const c10::optional<at::Tensor>& weight, int64_t reduction) {
  CheckLossDtype("multi_margin_loss_backward_cpu_kernel", self);
  MultiMargin m = MultiMarginSetup(self, target, p, weight, margin);
  at::Tensor d = p.toLong() == 1 ? at::ones_like(m.z) : m.z * 2;
  d = at::where(m.active, d, at::zeros({}, d.options())) / static_cast<double>(m.c);
  if (m.w.defined()) d = d * m.w;
  d = d * GradColumn(grad_output, reduction, m.n);
  // d/dx[j] = d_j for j != y; d/dx[y] = -sum_j d_j.
  at::Tensor grad = d.scatter_add(1, m.y, -d.sum(1, /*keepdim=*/true));
  return grad.reshape(self.sizes());
}

// ---- multilabel_margin_loss

struct MultiLabel {
  at::Tensor x, labels, valid, is_target, active;  // (N,C), (N,K), (N,K) bool, (N,C), (N,K,C) bool
  int64_t n, c;
};

MultiLabel MultiLabelSetup(const at::Tensor& self, const at::Tensor& target) {
  TORCH_CHECK((self.dim() <= 1 && self.numel() != 0) || (self.dim() == 2 && self.size(1) != 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  TORCH_CHECK(target.sizes() == self.sizes() || (self.dim() == 0 && target.numel() == 1),
              "inconsistent target size: ", target.sizes(), " for input of size: ", self.sizes());
  MultiLabel m;
  m.x = self.dim() <= 1 ? self.reshape({1, -1}) : self;
  m.n = m.x.size(0);
  m.c = m.x.size(1);
  at::Tensor t = target.reshape({m.n, m.c});
  // The targets are the entries before the first -1.
  m.valid = (t == -1).to(at::kLong).cumsum(1) == 0;
  m.labels = t.clamp(0, m.c - 1);
  m.is_target = at::zeros({m.n, m.c}, self.options())
                    .scatter_add(1, m.labels, m.valid.to(self.scalar_type())) > 0;
  at::Tensor xy = m.x.gather(1, m.labels);                    // (N, K)
  at::Tensor z = (m.x.unsqueeze(1) - xy.unsqueeze(2)) + 1.0;  // 1 - (x[y_k] - x[j]), (N, K, C)
  m.active = m.valid.unsqueeze(2) & m.is_target.logical_not().unsqueeze(1) & (z > 0);
  m.x = z;  // the hinge values, kept for the forward
  return m;
}

std::tuple<at::Tensor, at::Tensor> MultiLabelMarginLoss(const at::Tensor& self, const at::Tensor& target,
                                                        int64_t reduction) {
  CheckLossDtype("multilabel_margin_loss_forward_out_frame", self);
  MultiLabel m = MultiLabelSetup(self, target);
  at::Tensor per = at::where(m.active, m.x, at::zeros({}, m.x.options())).sum({1, 2}) / static_cast<double>(m.c);
  at::Tensor is_target = m.is_target.to(self.scalar_type()).reshape(self.sizes());
  return {Reduce(per, reduction, self.dim() <= 1), is_target};
}

at::Tensor MultiLabelMarginLossBackward(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, const at::Tensor& is_target) {
  CheckLossDtype("multilabel_margin_loss_backward_out_frame", self);
  (void)is_target;  // recomputed from target, as it is a function of it
  MultiLabel m = MultiLabelSetup(self, target);
  at::Tensor a = m.active.to(self.scalar_type()) / static_cast<double>(m.c);  // (N, K, C)
  at::Tensor g = GradColumn(grad_output, reduction, m.n);                    // (N, 1)
  // d/dx[j] = +#active (k, j); d/dx[y_k] = -#active (k, .).
  at::Tensor grad = a.sum(1).scatter_add(1, m.labels, -a.sum(2)) * g;
  return grad.reshape(self.sizes());
}

}  // namespace

void RegisterUnpoolMargin() {
  Impl("max_unpool2d", MaxUnpool2d);
  Impl("max_unpool2d.out", OutOf<MaxUnpool2d>);
  Impl("max_unpool3d", MaxUnpool3d);
  Impl("max_unpool3d.out", OutOf<MaxUnpool3d>);
  Impl("multi_margin_loss", MultiMarginLoss);
  Impl("multi_margin_loss.out", OutOf<MultiMarginLoss>);
  Impl("multi_margin_loss_backward", MultiMarginLossBackward);
  Impl("multi_margin_loss_backward.grad_input", OutOf<MultiMarginLossBackward>);
  Impl("multilabel_margin_loss_forward", MultiLabelMarginLoss);
  Impl("multilabel_margin_loss_forward.output", OutOf<MultiLabelMarginLoss>);
  Impl("multilabel_margin_loss_backward", MultiLabelMarginLossBackward);
  Impl("multilabel_margin_loss_backward.grad_input", OutOf<MultiLabelMarginLossBackward>);
}

}  // namespace torchtpu::aten
