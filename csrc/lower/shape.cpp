// Lowerings of the shape family: cat, flip, roll and tril/triu.
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

REGISTER_LOWERING("cat", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  DType out = static_cast<DType>(n.IntAttr(1));
  Values xs;
  for (const Value& v : in) xs.push_back(b.Convert(v, out));
  return Values{b.Concatenate(xs, dim)};
});

REGISTER_LOWERING("flip", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{b.Reverse(in[0], n.IntsAttr(0))};
});

REGISTER_LOWERING("roll", [](Builder& b, const graph::Node& n, const Values& in) {
  const auto& shifts = n.IntsAttr(0);
  const auto& dims = n.IntsAttr(1);
  Value x = in[0];
  hlo::Shape shape = x.shape();
  std::vector<int64_t> ds = dims;
  if (ds.empty()) {
    x = b.Reshape(x, {x.type.numel()});
    ds = {0};
  }
  for (size_t i = 0; i < ds.size(); ++i) {
    int64_t d = ds[i], len = x.shape()[d];
    if (len == 0) continue;
    int64_t s = ((shifts[i] % len) + len) % len;
    if (s == 0) continue;
    x = b.Concatenate({b.SliceDim(x, d, len - s, len), b.SliceDim(x, d, 0, len - s)}, d);
  }
  return Values{b.Reshape(x, shape)};
});

REGISTER_LOWERING("triangle", [](Builder& b, const graph::Node& n, const Values& in) {
  bool upper = n.BoolAttr(0);
  int64_t diagonal = n.IntAttr(1);
  Value x = in[0];
  int64_t r = x.rank();
  hlo::TensorType t{DType::kI64, x.shape()};
  Value diff = b.Sub(b.Iota(t, r - 1), b.Iota(t, r - 2));  // col - row
  Value k = b.Constant(Literal::Int(diagonal), DType::kI64, x.shape());
  Value keep = b.Cmp(diff, k, upper ? hlo::Compare::kGE : hlo::Compare::kLE);
  return Values{b.Select(keep, x, b.Constant(Literal::Int(0), x.dtype(), x.shape()))};
});

}  // namespace
}  // namespace torchtpu::lower
