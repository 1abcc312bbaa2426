// Lowerings of convolution (plain and transposed, any number of spatial
// dimensions) and of its backward, as stablehlo.convolution in PyTorch's
// layout (batch, feature, spatial...). The backward is the usual pair:
//  * the input gradient is a transposed convolution of the output gradient
//    (lhs dilation = stride, the kernel flipped with in/out features swapped
//    within each group);
//  * the weight gradient convolves the input with the output gradient, batch
//    and feature dimensions swapped, the groups as a batch_group_count.
// A transposed convolution is the input gradient of a plain one, so the two
// share these three building blocks with their roles exchanged.
// bf16/f16 compute in f32 and round once, as PyTorch's CPU kernels do.
#include <numeric>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {


struct Geometry {
  std::vector<int64_t> stride, padding, dilation, output_padding;
  bool transposed = false;
  int64_t groups = 1;
};

// attrs: 0 stride, 1 padding, 2 dilation, 3 transposed, 4 output_padding, 5 groups
Geometry GeometryOf(const graph::Node& n) {
  return Geometry{n.IntsAttr(0), n.IntsAttr(1), n.IntsAttr(2), n.IntsAttr(4), n.BoolAttr(3), n.IntAttr(5)};
}

std::vector<int64_t> Spatial(const Value& v) { return {v.shape().begin() + 2, v.shape().end()}; }

// [b, f, spatial...] -> [f, b, spatial...]
Value SwapBatchFeature(Builder& b, Value v) {
  std::vector<int64_t> perm(v.rank());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[0], perm[1]);
  return b.Transpose(v, perm);
}

// Kernel [O, I/g, k...] of a convolution x -> y becomes the kernel
// [I, O/g, k...] of the map y -> x: features swapped within each group and
// the window reversed.
Value FlipSwap(Builder& b, Value w, int64_t groups) {
  hlo::Shape s = w.shape();
  const int64_t out = s[0], in_per_group = s[1];
  hlo::Shape grouped{groups, out / groups, in_per_group};
  std::vector<int64_t> perm{0, 2, 1}, reversed;
  for (size_t i = 2; i < s.size(); ++i) {
    grouped.push_back(s[i]);
    perm.push_back(static_cast<int64_t>(i) + 1);
    reversed.push_back(static_cast<int64_t>(i));
  }
  Value t = b.Transpose(b.Reshape(w, grouped), perm);
  hlo::Shape swapped{groups * in_per_group, out / groups};
  swapped.insert(swapped.end(), s.begin() + 2, s.end());
  return b.Reverse(b.Reshape(t, swapped), reversed);
}

// Plain convolution x [N, I, ...] * w [O, I/g, k...] giving exactly `out`
// spatial sizes: low padding p, the high padding what `out` needs (less
// than p where the last rows of x are never reached).
Value ConvTo(Builder& b, Value x, Value w, const Geometry& g, const std::vector<int64_t>& out) {
  std::vector<int64_t> in = Spatial(x), k = Spatial(w);
  hlo::ConvOptions o;
  o.window_strides = g.stride;
  o.rhs_dilation = g.dilation;
  o.feature_group_count = g.groups;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t high = (out[i] - 1) * g.stride[i] + g.dilation[i] * (k[i] - 1) + 1 - in[i] - g.padding[i];
    o.padding.push_back({g.padding[i], high});
  }
  return hlo::Convolution(b, x, w, o);
}

// The map back from y [N, O, ...] to x-sized [N, I, out...] of the plain
// convolution with kernel w [O, I/g, k...]: the input gradient of a plain
// convolution, and the forward of a transposed one.
Value ConvBack(Builder& b, Value y, Value w, const Geometry& g, const std::vector<int64_t>& out) {
  std::vector<int64_t> in = Spatial(y), k = Spatial(w);
  hlo::ConvOptions o;
  o.lhs_dilation = g.stride;
  o.rhs_dilation = g.dilation;
  o.feature_group_count = g.groups;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t low = g.dilation[i] * (k[i] - 1) - g.padding[i];
    int64_t high = out[i] + g.dilation[i] * (k[i] - 1) - low - (in[i] - 1) * g.stride[i] - 1;
    o.padding.push_back({low, high});
  }
  return hlo::Convolution(b, y, FlipSwap(b, w, g.groups), o);
}

// Weight gradient [O, I/g, k...] of the plain convolution x [N, I, ...] ->
// y [N, O, ...] from the output gradient gy.
Value ConvWeightGrad(Builder& b, Value x, Value gy, const Geometry& g, const std::vector<int64_t>& k) {
  std::vector<int64_t> in = Spatial(x), out = Spatial(gy);
  hlo::ConvOptions o;
  o.window_strides = g.dilation;
  o.rhs_dilation = g.stride;
  o.batch_group_count = g.groups;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t high = (k[i] - 1) * g.dilation[i] + (out[i] - 1) * g.stride[i] + 1 - in[i] - g.padding[i];
    o.padding.push_back({g.padding[i], high});
  }
  return SwapBatchFeature(b, hlo::Convolution(b, SwapBatchFeature(b, x), SwapBatchFeature(b, gy), o));
}

std::vector<int64_t> AllButFeature(int64_t rank) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

// inputs: x, w, [bias]; attr 6: has bias
Values LowerConv(Builder& b, const graph::Node& n, const Values& in) {
  Geometry g = GeometryOf(n);
  DType out_dtype = in[0].dtype(), acc = AccumulateType(out_dtype);
  Value x = b.Convert(in[0], acc), w = b.Convert(in[1], acc);
  std::vector<int64_t> xs = Spatial(x), ks = Spatial(w), os;
  Value y;
  if (g.transposed) {
    for (size_t i = 0; i < xs.size(); ++i) {
      os.push_back((xs[i] - 1) * g.stride[i] - 2 * g.padding[i] + g.dilation[i] * (ks[i] - 1) +
                   g.output_padding[i] + 1);
    }
    y = ConvBack(b, x, w, g, os);
  } else {
    for (size_t i = 0; i < xs.size(); ++i) {
      os.push_back((xs[i] + 2 * g.padding[i] - g.dilation[i] * (ks[i] - 1) - 1) / g.stride[i] + 1);
    }
    y = ConvTo(b, x, w, g, os);
  }
  if (n.BoolAttr(6)) y = b.Add(y, b.BroadcastInDim(b.Convert(in[2], acc), y.shape(), {1}));
  return {b.Convert(y, out_dtype)};
}

// inputs: grad_output, x, w; attr 6: output mask (3 ints). Results: the
// gradients the mask asks for, in order input, weight, bias.
Values LowerConvBackward(Builder& b, const graph::Node& n, const Values& in) {
  Geometry g = GeometryOf(n);
  const std::vector<int64_t>& mask = n.IntsAttr(6);
  DType acc = AccumulateType(in[0].dtype());
  Value gy = b.Convert(in[0], acc), x = b.Convert(in[1], acc), w = b.Convert(in[2], acc);
  Values out;
  if (mask[0]) {
    Value gx = g.transposed ? ConvTo(b, gy, w, g, Spatial(x)) : ConvBack(b, gy, w, g, Spatial(x));
    out.push_back(b.Convert(gx, in[1].dtype()));
  }
  if (mask[1]) {
    Value gw = g.transposed ? ConvWeightGrad(b, gy, x, g, Spatial(w)) : ConvWeightGrad(b, x, gy, g, Spatial(w));
    out.push_back(b.Convert(gw, in[2].dtype()));
  }
  if (mask[2]) {
    Value gb = ReduceWith(b, gy, AllButFeature(gy.rank()), "add", Literal::Float(0));
    out.push_back(b.Convert(gb, in[0].dtype()));
  }
  return out;
}

REGISTER_LOWERING("conv", LowerConv);
REGISTER_LOWERING("conv_backward", LowerConvBackward);

}  // namespace
}  // namespace torchtpu::lower
