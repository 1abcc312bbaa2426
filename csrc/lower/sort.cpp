// Lowerings of the sort family: sort/argsort/topk: a stable sort of (key, index) pairs with PyTorch's NaN order.
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

REGISTER_LOWERING("sort", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t dim = n.IntAttr(0);
  bool descending = n.BoolAttr(1);
  int64_t k = n.IntAttr(2);
  Value x = in[0];
  if (x.rank() == 0) return Values{x, b.Constant(Literal::Int(0), DType::kI64, {})};
  // Bool has no ordered comparison in StableHLO: sort its u8 image.
  Value keys = x.dtype() == DType::kBool ? b.Convert(x, DType::kU8) : x;
  Value idx = b.Iota(hlo::TensorType{DType::kI64, x.shape()}, dim);
  Values sorted = b.Sort({keys, idx}, dim, /*stable=*/true, [descending](Builder& rb, const Values& a) {
    Value lhs = a[0], rhs = a[1];
    Value before = rb.Cmp(lhs, rhs, descending ? hlo::Compare::kGT : hlo::Compare::kLT);
    if (hlo::IsFloat(lhs.dtype())) {
      Value ln = IsNan(rb, lhs), rn = IsNan(rb, rhs);
      // Ascending: a number before NaN. Descending: NaN before a number.
      Value nan_order = descending ? And(rb, ln, Not(rb, rn)) : And(rb, Not(rb, ln), rn);
      before = Or(rb, nan_order, before);
    }
    return Values{before};
  });
  Value values = b.Convert(sorted[0], x.dtype()), indices = sorted[1];
  if (k >= 0) {
    values = b.SliceDim(values, dim, 0, k);
    indices = b.SliceDim(indices, dim, 0, k);
  }
  return Values{values, indices};
});

}  // namespace
}  // namespace torchtpu::lower
