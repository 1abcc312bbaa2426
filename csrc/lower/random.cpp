// Lowerings of the random ops. Every node's first two operands are the
// Threefry key and counter (rank-0 i64 runtime scalars computed on the host by
// generator.h), so reseeding or advancing a generator reuses the program.
// Bits come from stablehlo.rng_bit_generator; the distributions are built
// from them in f32 (f64 for double), as PyTorch's CPU kernels compute them.
#include <cmath>

#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using hlo::TensorType;

// `shape` (a flat or shaped tensor) of uniformly random bits, as i32
// (wide = false) or i64 (wide = true).
Value Bits(Builder& b, Value key, Value counter, const hlo::Shape& shape, bool wide) {
  Value state = b.Concatenate({b.Reshape(key, {1}), b.Reshape(counter, {1})}, 0);
  state = b.BitcastConvert(state, DType::kU64);
  TensorType raw{wide ? DType::kU64 : DType::kU32, {hlo::NumElements(shape)}};
  Value bits = b.Op("stablehlo.rng_bit_generator", {state}, {state.type, raw},
                    "{rng_algorithm = #stablehlo<rng_algorithm THREE_FRY>}")[1];
  return b.Reshape(b.BitcastConvert(bits, wide ? DType::kI64 : DType::kI32), shape);
}

int Width(const Value& bits) { return bits.dtype() == DType::kI64 ? 64 : 32; }

// The top `n` bits as a non-negative integer.
Value TopBits(Builder& b, Value bits, int n) {
  return b.Binary("shift_right_logical", bits, SplatInt(b, Width(bits) - n, bits));
}

// Uniform on [0, 1) with `digits` random bits: k / 2^digits, exact in `compute`.
Value Unit(Builder& b, Value bits, int digits, DType compute) {
  Value k = b.Convert(TopBits(b, bits, digits), compute);
  return b.Mul(k, Splat(b, std::ldexp(1.0, -digits), k));
}

// Uniform on the open interval (0, 1): (2k + 1) / 2^digits, so log() is finite.
Value OpenUnit(Builder& b, Value bits, int digits, DType compute) {
  Value k = b.Convert(TopBits(b, bits, digits - 1), compute);
  Value odd = b.Add(b.Add(k, k), Splat(b, 1.0, k));
  return b.Mul(odd, Splat(b, std::ldexp(1.0, -digits), odd));
}

// Full-precision uniforms for a compute dtype: 24 bits in f32, 53 in f64.
int Digits(DType compute) { return compute == DType::kF64 ? 53 : 24; }
bool Wide(DType compute) { return compute == DType::kF64; }

Value UnitOf(Builder& b, const Values& in, const hlo::Shape& shape, DType compute) {
  return Unit(b, Bits(b, in[0], in[1], shape, Wide(compute)), Digits(compute), compute);
}
Value OpenUnitOf(Builder& b, const Values& in, const hlo::Shape& shape, DType compute) {
  return OpenUnit(b, Bits(b, in[0], in[1], shape, Wide(compute)), Digits(compute), compute);
}

Value ScalarAs(Builder& b, Value s, const Value& like) {
  return b.BroadcastTo(b.Convert(s, like.dtype()), like.shape());
}

// Standard normals by Box-Muller from two independent uniforms per value.
Value StandardNormal(Builder& b, const Values& in, const hlo::Shape& shape, DType compute) {
  hlo::Shape pair = shape;
  pair.insert(pair.begin(), 2);
  Value bits = Bits(b, in[0], in[1], pair, Wide(compute));
  auto half = [&](int64_t i) { return b.Reshape(b.SliceDim(bits, 0, i, i + 1), shape); };
  Value u1 = OpenUnit(b, half(0), Digits(compute), compute);
  Value u2 = Unit(b, half(1), Digits(compute), compute);
  Value radius = b.Unary("sqrt", b.Mul(Splat(b, -2.0, u1), b.Unary("log", u1)));
  Value angle = b.Mul(Splat(b, 2.0 * M_PI, u2), u2);
  return b.Mul(radius, b.Unary("cosine", angle));
}

// Attributes of the elementwise samplers: 0 shape, 1 result dtype,
// 2 compute dtype. Operands: key, counter, then the distribution's scalars.
struct Sampler {
  hlo::Shape shape;
  DType out, compute;
  explicit Sampler(const graph::Node& n)
      : shape(n.IntsAttr(0)), out(static_cast<DType>(n.IntAttr(1))), compute(static_cast<DType>(n.IntAttr(2))) {}
};

// uniform_(from, to): u * (to - from) + from in the compute dtype, rounded to
// the result dtype; a value that rounds up to `to` becomes `from`, as in
// PyTorch's CPU kernel, so the range stays [from, to) for bf16/f16 too.
// Operands 2, 3: from and to in the result dtype.
REGISTER_LOWERING("rng.uniform", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value u = UnitOf(b, in, s.shape, s.compute);
  Value from = ScalarAs(b, in[2], u), to = ScalarAs(b, in[3], u);
  Value r = b.Convert(b.Add(b.Mul(u, b.Sub(to, from)), from), s.out);
  Value to_out = b.BroadcastTo(in[3], s.shape);
  return Values{b.Select(b.Cmp(r, to_out, Compare::kEQ), b.BroadcastTo(in[2], s.shape), r)};
});

// normal_(mean, std); log_normal_(mean, std) with attribute 3 true.
REGISTER_LOWERING("rng.normal", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value z = StandardNormal(b, in, s.shape, s.compute);
  Value x = b.Add(b.Mul(z, ScalarAs(b, in[3], z)), ScalarAs(b, in[2], z));
  if (n.BoolAttr(3)) x = b.Unary("exponential", x);
  return Values{b.Convert(x, s.out)};
});

// exponential_(lambda): -log(u) / lambda with u in (0, 1), never 0 or inf.
REGISTER_LOWERING("rng.exponential", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value u = OpenUnitOf(b, in, s.shape, s.compute);
  Value x = b.Div(b.Unary("negate", b.Unary("log", u)), ScalarAs(b, in[2], u));
  return Values{b.Convert(x, s.out)};
});

// geometric_(p): ceil(log(u) / log1p(-p)), the number of trials to the first success.
REGISTER_LOWERING("rng.geometric", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value u = OpenUnitOf(b, in, s.shape, s.compute);
  Value q = b.Unary("log_plus_one", b.Unary("negate", ScalarAs(b, in[2], u)));
  return Values{b.Convert(b.Unary("ceil", b.Div(b.Unary("log", u), q)), s.out)};
});

// cauchy_(median, sigma): median + sigma * tan(pi * (u - 1/2)).
REGISTER_LOWERING("rng.cauchy", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value u = OpenUnitOf(b, in, s.shape, s.compute);
  Value angle = b.Mul(Splat(b, M_PI, u), b.Sub(u, Splat(b, 0.5, u)));
  Value t = b.Div(b.Unary("sine", angle), b.Unary("cosine", angle));
  Value x = b.Add(ScalarAs(b, in[2], u), b.Mul(ScalarAs(b, in[3], u), t));
  return Values{b.Convert(x, s.out)};
});

// bernoulli_: u < p, with p a scalar or a tensor broadcast to the shape.
REGISTER_LOWERING("rng.bernoulli", [](Builder& b, const graph::Node& n, const Values& in) {
  Sampler s(n);
  Value u = UnitOf(b, in, s.shape, s.compute);
  Value p = b.BroadcastTo(b.Convert(in[2], s.compute), s.shape);
  return Values{b.Convert(b.Cmp(u, p, Compare::kLT), s.out)};
});

// random_: (bits mod range) + base in 64-bit two's complement, then cast, as
// PyTorch's uniform_int_from_to. Attributes 2: 64 random bits per value
// (else 32), 3: full 2^64 range (no modulo). Operands: key, counter, range
// (an unsigned 64-bit pattern in i64), base.
REGISTER_LOWERING("rng.random", [](Builder& b, const graph::Node& n, const Values& in) {
  hlo::Shape shape = n.IntsAttr(0);
  DType out = static_cast<DType>(n.IntAttr(1));
  bool wide = n.BoolAttr(2), full = n.BoolAttr(3);
  Value bits = Bits(b, in[0], in[1], shape, wide);
  Value v = wide ? b.BitcastConvert(bits, DType::kU64)
                 : b.Convert(b.BitcastConvert(bits, DType::kU32), DType::kU64);
  if (!full) {
    Value range = b.BroadcastTo(b.BitcastConvert(in[2], DType::kU64), shape);
    v = b.Binary("remainder", v, range);
  }
  Value r = b.Add(b.BitcastConvert(v, DType::kI64), b.BroadcastTo(in[3], shape));
  return Values{b.Convert(r, out)};
});

// randperm(n): the order that sorts n random 64-bit keys.
REGISTER_LOWERING("rng.randperm", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t count = n.IntAttr(0);
  DType out = static_cast<DType>(n.IntAttr(1));
  Value keys = Bits(b, in[0], in[1], {count}, true);
  Value iota = b.Iota(TensorType{DType::kI64, {count}}, 0);
  Value perm = b.Sort({keys, iota}, 0, false, [](Builder& rb, const Values& a) {
    return Values{rb.Cmp(a[0], a[1], Compare::kLT)};
  })[1];
  return Values{b.Convert(perm, out)};
});

// Inclusive prefix sums along the last dimension of a 2-D value.
Value CumSumRows(Builder& b, Value x) {
  int64_t len = x.shape()[1];
  Value zero = b.Constant(Literal::Int(0), x.dtype(), {});
  return b.ReduceWindow({x}, {zero}, {1, len}, {1, 1}, {1, 1}, {1, 1}, {{0, 0}, {len - 1, 0}},
                        [](Builder& rb, const Values& a) { return Values{rb.Add(a[0], a[1])}; })[0];
}

// Per row r and sample j: the number of prefix sums cdf[r, :] <= target[r, j]
// (cdf is non-decreasing), by a binary search of log2(categories) gathers.
Value CountAtMost(Builder& b, Value cdf, Value target) {
  int64_t rows = cdf.shape()[0], cats = cdf.shape()[1], samples = target.shape()[1];
  hlo::Shape shape{rows, samples};
  Value row = b.Reshape(b.Iota(TensorType{DType::kI64, shape}, 0), {rows, samples, 1});
  hlo::GatherDims dims;
  dims.collapsed_slice_dims = {0, 1};
  dims.start_index_map = {0, 1};
  dims.index_vector_dim = 2;
  dims.slice_sizes = {1, 1};
  Value pos = b.Constant(Literal::Int(0), DType::kI64, shape);
  int64_t step = 1;
  while (step * 2 <= cats) step *= 2;
  for (; step > 0; step /= 2) {
    Value next = b.Add(pos, SplatInt(b, step, pos));
    Value fits = b.Cmp(next, SplatInt(b, cats, next), Compare::kLE);
    Value col = b.Sub(b.Min(next, SplatInt(b, cats, next)), SplatInt(b, 1, next));
    Value at = b.Concatenate({row, b.Reshape(col, {rows, samples, 1})}, 2);
    Value value = b.Gather(cdf, at, dims);
    pos = b.Select(And(b, fits, b.Cmp(value, target, Compare::kLE)), next, pos);
  }
  return pos;
}

// With replacement, by inverse CDF: sample j of row r is the first category
// whose prefix sum exceeds u_j * total_r. Clamped to the last category of
// positive probability against rounding at the top end.
Value SampleWithReplacement(Builder& b, const Values& in, Value p, int64_t samples) {
  int64_t rows = p.shape()[0], cats = p.shape()[1];
  DType c = p.dtype();
  Value cdf = CumSumRows(b, p);
  Value total = b.SliceDim(cdf, 1, cats - 1, cats);  // [rows, 1]
  Value u = UnitOf(b, in, {rows, samples}, c);
  Value target = b.Mul(u, b.BroadcastInDim(total, {rows, samples}, {0, 1}));
  Value count = CountAtMost(b, cdf, target);
  Value idx = b.Iota(TensorType{DType::kI64, {rows, cats}}, 1);
  Value positive = b.Cmp(p, Splat(b, 0.0, p), Compare::kGT);
  Value last = ReduceWith(b, b.Select(positive, idx, SplatInt(b, 0, idx)), {1}, "maximum", Literal::Int(0));
  return b.Min(count, b.BroadcastInDim(last, {rows, samples}, {0}));
}

// Without replacement (and single draws), PyTorch's exponential trick: the
// top `samples` of p / q with q ~ Exp(1) (Gumbel top-k).
Value SampleWithoutReplacement(Builder& b, const Values& in, Value p, int64_t samples) {
  int64_t rows = p.shape()[0], cats = p.shape()[1];
  Value q = b.Unary("negate", b.Unary("log", OpenUnitOf(b, in, p.shape(), p.dtype())));
  Value score = b.Div(p, q);
  Value idx = b.Iota(TensorType{DType::kI64, {rows, cats}}, 1);
  Value order = b.Sort({score, idx}, 1, true, [](Builder& rb, const Values& a) {
    return Values{rb.Cmp(a[0], a[1], Compare::kGT)};
  })[1];
  return b.SliceDim(order, 1, 0, samples);
}

// multinomial: attributes 0 samples, 1 with replacement, 2 compute dtype.
// Operand 2: the probabilities, 1-D or 2-D; the result has their rank.
REGISTER_LOWERING("rng.multinomial", [](Builder& b, const graph::Node& n, const Values& in) {
  int64_t samples = n.IntAttr(0);
  bool replacement = n.BoolAttr(1);
  DType compute = static_cast<DType>(n.IntAttr(2));
  Value p = b.Convert(in[2], compute);
  bool vector = p.rank() == 1;
  if (vector) p = b.Reshape(p, {1, p.shape()[0]});
  Value r = replacement && samples > 1 ? SampleWithReplacement(b, in, p, samples)
                                       : SampleWithoutReplacement(b, in, p, samples);
  return Values{vector ? b.Reshape(r, {samples}) : r};
});

// Flags for PyTorch's multinomial input errors, checked on the host:
// [some entry < 0 or NaN, some entry inf, some row sums to <= 0].
REGISTER_LOWERING("rng.prob_check", [](Builder& b, const graph::Node& n, const Values& in) {
  DType compute = static_cast<DType>(n.IntAttr(0));
  Value p = b.Convert(in[0], compute);
  bool vector = p.rank() == 1;
  if (vector) p = b.Reshape(p, {1, p.shape()[0]});
  auto any = [&](Value pred) {
    return b.Reshape(ReduceWith(b, pred, {0, 1}, "or", Literal::Bool(false)), {1});
  };
  Value bad = Not(b, b.Cmp(p, Splat(b, 0.0, p), Compare::kGE));
  Value inf = b.Cmp(p, Splat(b, INFINITY, p), Compare::kEQ);
  Value sums = ReduceWith(b, p, {1}, "add", Literal::Int(0));
  Value empty = b.Reshape(b.Cmp(sums, Splat(b, 0.0, sums), Compare::kLE), {sums.shape()[0], 1});
  return Values{b.Concatenate({any(bad), any(inf), any(empty)}, 0)};
});

// Whether every p is in [0, 1] (NaN is not), for bernoulli_'s host-side check.
REGISTER_LOWERING("rng.unit_check", [](Builder& b, const graph::Node& n, const Values& in) {
  Value p = in[0];
  Value ok = And(b, b.Cmp(p, Splat(b, 0.0, p), Compare::kGE), b.Cmp(p, Splat(b, 1.0, p), Compare::kLE));
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < p.rank(); ++d) dims.push_back(d);
  return Values{ReduceWith(b, ok, dims, "and", Literal::Bool(true))};
});

// native_dropout in training: keep = u < 1 - p; out = x * keep * scale in
// the compute dtype, rounded once. Operands: key, counter, x, 1 - p, scale.
REGISTER_LOWERING("rng.dropout", [](Builder& b, const graph::Node& n, const Values& in) {
  DType compute = static_cast<DType>(n.IntAttr(0));
  Value x = b.Convert(in[2], compute);
  Value u = UnitOf(b, in, x.shape(), compute);
  Value keep = b.Cmp(u, ScalarAs(b, in[3], u), Compare::kLT);
  Value kept = b.Mul(x, b.Convert(keep, compute));
  Value out = b.Mul(kept, ScalarAs(b, in[4], kept));
  return Values{b.Convert(out, in[2].dtype()), keep};
});

// native_dropout_backward: grad * mask * scale (no randomness; beside its
// forward). Operands: grad, bool mask, scale.
REGISTER_LOWERING("rng.dropout_backward", [](Builder& b, const graph::Node& n, const Values& in) {
  DType compute = static_cast<DType>(n.IntAttr(0));
  Value g = b.Convert(in[0], compute);
  Value kept = b.Mul(g, b.Convert(in[1], compute));
  return Values{b.Convert(b.Mul(kept, ScalarAs(b, in[2], kept)), in[0].dtype())};
});

}  // namespace
}  // namespace torchtpu::lower
