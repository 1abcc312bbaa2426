// Lowerings of the cumulative scans beyond cumsum/cumprod (reduce.cpp):
// cummax/cummin (values and indices) and logcumsumexp. Each is one
// reduce_window over the whole prefix along `dim`, as the "scan" lowering
// does, so it is one program whatever the length.
//  * cummax/cummin keep the CPU kernel's rule: a new element replaces the
//    running extreme when it is NaN or (the extreme is not NaN and) it is
//    >= (cummin: <=) it, so ties and NaNs report the LAST index. As a
//    reduction this is the maximum of the key (is NaN, value — for cummin
//    its negation —, index), a total order, hence associative and
//    commutative as reduce_window requires. The value of a NaN key is not
//    compared, only its index.
//  * logcumsumexp combines two partial results with
//    log(e^a + e^b) = max + log1p(exp(min - max)), and equal infinities give
//    themselves (their difference would be NaN), a NaN gives NaN. f16/bf16 are
//    computed in f32.
#include <limits>
#include <string>
#include <vector>

#include "graph/lowering.h"
#include "lower/log_add_exp.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;

Literal Lowest(DType d) {
  if (hlo::IsFloat(d)) return Literal::Float(-std::numeric_limits<double>::infinity());
  if (d == DType::kBool || d == DType::kU8) return Literal::Int(0);
  if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::min());
  if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::min());
  if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::min());
  return Literal::Int(std::numeric_limits<int64_t>::min());
}
Literal Highest(DType d) {
  if (hlo::IsFloat(d)) return Literal::Float(std::numeric_limits<double>::infinity());
  if (d == DType::kBool) return Literal::Int(1);
  if (d == DType::kU8) return Literal::Int(255);
  if (d == DType::kI8) return Literal::Int(std::numeric_limits<int8_t>::max());
  if (d == DType::kI16) return Literal::Int(std::numeric_limits<int16_t>::max());
  if (d == DType::kI32) return Literal::Int(std::numeric_limits<int32_t>::max());
  return Literal::Int(std::numeric_limits<int64_t>::max());
}

// A reduce_window over the prefix of each position along `dim`.
//
// XLA's CPU pipeline rewrites a long reduce_window into a tree over a
// power-of-two length, and for a variadic one (cummax's value and index)
// whose length is not a power of two and above 16 it builds a tuple of the
// wrong element types: the compile fails with a RET_CHECK
// (ShapeUtil::CompatibleIgnoringFpPrecision). Variadic scans are therefore
// padded at the end with the inits to a power of two (later positions do not
// change a prefix) and sliced back.
Values PrefixScan(Builder& b, const Values& xs, const Values& inits, int64_t dim, const hlo::RegionFn& body) {
  const int64_t rank = xs[0].rank();
  const int64_t len = xs[0].shape()[dim];
  int64_t scanned = std::max<int64_t>(len, 1);
  Values ins = xs;
  if (xs.size() > 1 && len > 16 && (len & (len - 1)) != 0) {
    scanned = 1;
    while (scanned < len) scanned *= 2;
    std::vector<int64_t> zeros(rank, 0), high(rank, 0);
    high[dim] = scanned - len;
    for (size_t i = 0; i < xs.size(); ++i) ins[i] = b.Pad(xs[i], inits[i], zeros, high, zeros);
  }
  std::vector<int64_t> window(rank, 1), ones(rank, 1);
  std::vector<std::pair<int64_t, int64_t>> padding(rank, {0, 0});
  window[dim] = scanned;
  padding[dim] = {scanned - 1, 0};
  Values out = b.ReduceWindow(ins, inits, window, ones, ones, ones, padding, body);
  if (scanned != std::max<int64_t>(len, 1)) {
    for (Value& v : out) v = b.SliceDim(v, dim, 0, len);
  }
  return out;
}

// attrs: 0 max (true: cummax, false: cummin), 1 dim. input: self.
// results: values (self's dtype), indices (int64).
REGISTER_LOWERING("cummaxmin", [](Builder& b, const graph::Node& n, const Values& in) {
  const bool is_max = n.BoolAttr(0);
  const int64_t dim = n.IntAttr(1);
  Value x = in[0];
  if (x.rank() == 0) return Values{x, b.Constant(Literal::Int(0), DType::kI64, {})};
  if (x.type.numel() == 0) return Values{x, b.Constant(Literal::Int(0), DType::kI64, x.shape())};
  const DType dtype = x.dtype();
  // bool is scanned as u8 (0/1): comparisons on i1 are not portable.
  const DType work = dtype == DType::kBool ? DType::kU8 : dtype;
  Value v = b.Convert(x, work);
  Value idx = b.Iota(hlo::TensorType{DType::kI64, x.shape()}, dim);
  const bool is_float = hlo::IsFloat(work);
  Value v_init = b.Constant(is_max ? Lowest(work) : Highest(work), work, {});
  Value i_init = b.Constant(Literal::Int(-1), DType::kI64, {});
  auto body = [is_max, is_float](Builder& rb, const Values& a) {
    Value v1 = a[0], i1 = a[1], v2 = a[2], i2 = a[3];
    // Is (v2, i2) the better key?
    Value later = rb.Cmp(i2, i1, Compare::kGT);
    Value better_v = rb.Cmp(v2, v1, is_max ? Compare::kGT : Compare::kLT);
    Value equal_v = rb.Cmp(v2, v1, Compare::kEQ);
    Value second = Or(rb, better_v, And(rb, equal_v, later));
    if (is_float) {
      Value nan1 = IsNan(rb, v1), nan2 = IsNan(rb, v2);
      // A NaN beats any number; between two NaNs the later index wins.
      Value both = And(rb, nan1, nan2);
      Value neither = And(rb, Not(rb, nan1), Not(rb, nan2));
      second = rb.Select(both, later, rb.Select(neither, second, nan2));
    }
    return Values{rb.Select(second, v2, v1), rb.Select(second, i2, i1)};
  };
  Values r = PrefixScan(b, {v, idx}, {v_init, i_init}, dim, body);
  Value values = dtype == DType::kBool ? b.Cmp(r[0], SplatInt(b, 0, r[0]), Compare::kNE) : r[0];
  return Values{values, r[1]};
});

// Complex input, in the CPU's order: one element after another along `dim`,
// cum = log_add_exp(x_i, cum) from cum = -inf. A tree of partial results (the
// real scan above) would give the same value up to a multiple of 2 pi i: the
// imaginary part is the phase of whichever operand has the larger real part
// plus the phases log1p adds along the way, so it depends on the order.
// One while loop over the length of `dim`, every other position at once.
Value ComplexLogcumsumexp(Builder& b, Value x, int64_t dim) {
  std::vector<int64_t> perm = {dim};
  for (int64_t d = 0; d < x.rank(); ++d)
    if (d != dim) perm.push_back(d);
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[perm[i]] = static_cast<int64_t>(i);
  Value front = b.Transpose(x, perm);
  const hlo::Shape moved = front.shape();
  const int64_t steps = moved[0], rest = front.type.numel() / steps;
  Value rows = b.Reshape(front, {steps, rest});
  Value zero = I64(b, 0);
  Value init = b.Constant(Literal::Float(-std::numeric_limits<double>::infinity()), x.dtype(), {rest});  // -inf + 0i
  Values state = b.While(
      {zero, init, rows, rows},
      [steps](Builder& rb, const Values& s) { return Values{rb.Cmp(s[0], I64(rb, steps), Compare::kLT)}; },
      [rest](Builder& rb, const Values& s) {
        Value t = s[0], cum = s[1], all = s[2], src = s[3];
        Value z = I64(rb, 0);
        Value row = rb.Reshape(rb.DynamicSlice(src, {t, z}, {1, rest}), {rest});
        Value next = ComplexLogAddExp(rb, row, cum);
        return Values{rb.Add(t, I64(rb, 1)), next, rb.DynamicUpdateSlice(all, rb.Reshape(next, {1, rest}), {t, z}),
                      src};
      });
  return b.Transpose(b.Reshape(state[2], moved), inverse);
}

// attrs: 0 dim, 1 compute dtype. input: self (floating or complex: complex64
// accumulates in complex128, as the CPU's acc_type). result: self's dtype.
REGISTER_LOWERING("logcumsumexp", [](Builder& b, const graph::Node& n, const Values& in) {
  const int64_t dim = n.IntAttr(0);
  const DType compute = static_cast<DType>(n.IntAttr(1));
  Value x = in[0];
  if (x.rank() == 0 || x.type.numel() == 0) return Values{x};
  if (hlo::IsComplex(compute)) return Values{b.Convert(ComplexLogcumsumexp(b, b.Convert(x, compute), dim), x.dtype())};
  Value v = b.Convert(x, compute);
  Value init = b.Constant(Lowest(compute), compute, {});
  auto body = [](Builder& rb, const Values& a) {
    Value hi = rb.Max(a[0], a[1]), lo = rb.Min(a[0], a[1]);
    Value inf = rb.Constant(Literal::Float(std::numeric_limits<double>::infinity()), hi.dtype(), hi.shape());
    Value same_inf = And(rb, rb.Cmp(hi, lo, Compare::kEQ), rb.Cmp(rb.Unary("abs", hi), inf, Compare::kEQ));
    Value sum = rb.Add(hi, rb.Unary("log_plus_one", rb.Unary("exponential", rb.Sub(lo, hi))));
    // A NaN operand gives NaN (XLA's CPU maximum/minimum can drop it).
    Value nan = Or(rb, IsNan(rb, a[0]), IsNan(rb, a[1]));
    return Values{rb.Select(nan, rb.Add(a[0], a[1]), rb.Select(same_inf, hi, sum))};
  };
  Value r = PrefixScan(b, {v}, {init}, dim, body)[0];
  return Values{b.Convert(r, x.dtype())};
});

}  // namespace
}  // namespace torchtpu::lower
