// Lowerings of the elementwise ops. Each takes its operands already converted
// to the compute dtype and broadcast (attribute 0 = compute dtype, 1 = result
// dtype), and reads like a table: one short function per op.
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "lower/elementwise.h"
#include "lower/log_add_exp.h"
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

using hlo::Compare;
using Fn = std::function<Value(Builder&, const graph::Node&, const Values&)>;

Value Trunc(Builder& b, Value x) {
  if (!hlo::IsFloat(x.dtype())) return x;
  Value neg = b.Cmp(x, Splat(b, 0, x), Compare::kLT);
  return b.Select(neg, b.Unary("ceil", x), b.Unary("floor", x));
}

// (0 < x) - (x < 0), as PyTorch: NaN gives 0, not NaN. Of a complex x
// (sgn), x / |x| with each part divided by the real |x|, and 0 at 0, as the
// CPU's sgn_impl.
Value Sign(Builder& b, Value x) {
  if (x.dtype() == DType::kBool) return x;
  if (hlo::IsComplex(x.dtype())) {
    Value abs = b.Op("stablehlo.abs", {x}, {hlo::TensorType{hlo::ComplexPart(x.dtype()), x.shape()}})[0];
    Value unit = b.MakeComplex(b.Div(b.Real(x), abs), b.Div(b.Imag(x), abs));
    return b.Select(b.Cmp(abs, Splat(b, 0, abs), Compare::kEQ), Splat(b, 0, x), unit);
  }
  // stablehlo.sign takes signless integers only: an unsigned value's sign
  // is whether it is nonzero.
  if (hlo::IsUnsignedInt(x.dtype())) return b.Convert(b.Cmp(x, Splat(b, 0, x), Compare::kNE), x.dtype());
  if (!hlo::IsFloat(x.dtype())) return b.Unary("sign", x);
  Value zero = Splat(b, 0, x);
  return b.Sub(b.Convert(b.Cmp(x, zero, Compare::kGT), x.dtype()), b.Convert(b.Cmp(x, zero, Compare::kLT), x.dtype()));
}

// The sign bit, also of -0.0 and NaN: the float's bits read as a signed integer.
Value SignBit(Builder& b, Value x) {
  if (x.dtype() == DType::kBool || hlo::IsUnsignedInt(x.dtype())) {
    return b.Constant(Literal::Bool(false), DType::kBool, x.shape());
  }
  if (!hlo::IsFloat(x.dtype())) return b.Cmp(x, SplatInt(b, 0, x), Compare::kLT);
  DType bits = hlo::DTypeSize(x.dtype()) == 2 ? DType::kI16 : hlo::DTypeSize(x.dtype()) == 4 ? DType::kI32 : DType::kI64;
  Value i = b.BitcastConvert(x, bits);
  return b.Cmp(i, SplatInt(b, 0, i), Compare::kLT);
}

// PyTorch's floor division (c10::div_floor_floating / _integer).
Value FloorDiv(Builder& b, Value a, Value c) {
  if (hlo::IsFloat(a.dtype())) {
    Value mod = b.Binary("remainder", a, c);
    Value div = b.Div(b.Sub(a, mod), c);
    Value zero = Splat(b, 0, a);
    Value mod_nz = b.Cmp(mod, zero, Compare::kNE);
    Value signs_differ = b.Cmp(b.Cmp(c, zero, Compare::kLT), b.Cmp(mod, zero, Compare::kLT), Compare::kNE);
    div = b.Select(And(b, mod_nz, signs_differ), b.Sub(div, Splat(b, 1, a)), div);
    Value floordiv = b.Unary("floor", div);
    Value round_up = b.Cmp(b.Sub(div, floordiv), Splat(b, 0.5, a), Compare::kGT);
    floordiv = b.Select(round_up, b.Add(floordiv, Splat(b, 1, a)), floordiv);
    // Division by zero and exact zeros: fall back to a / c, keeping its sign.
    Value plain = b.Div(a, c);
    Value div_zero = b.Cmp(div, zero, Compare::kEQ);
    Value copysign = b.Mul(Splat(b, 0, a), plain);
    floordiv = b.Select(div_zero, copysign, floordiv);
    Value c_zero = b.Cmp(c, zero, Compare::kEQ);
    return b.Select(c_zero, plain, floordiv);
  }
  if (a.dtype() == DType::kBool || hlo::IsUnsignedInt(a.dtype())) return b.Div(a, c);
  Value q = b.Div(a, c);
  Value r = b.Binary("remainder", a, c);
  Value zero = SplatInt(b, 0, a);
  Value adjust = And(b, b.Cmp(r, zero, Compare::kNE),
                     b.Cmp(b.Cmp(r, zero, Compare::kLT), b.Cmp(c, zero, Compare::kLT), Compare::kNE));
  return b.Select(adjust, b.Sub(q, SplatInt(b, 1, a)), q);
}

// Python-style modulus: the result takes the divisor's sign.
Value Remainder(Builder& b, Value a, Value c) {
  Value r = b.Binary("remainder", a, c);
  if (a.dtype() == DType::kBool) return r;
  Value zero = Splat(b, 0, a);
  Value adjust = And(b, b.Cmp(r, zero, Compare::kNE),
                     b.Cmp(b.Cmp(r, zero, Compare::kLT), b.Cmp(c, zero, Compare::kLT), Compare::kNE));
  return b.Select(adjust, b.Add(r, c), r);
}

// NaN-propagating maximum/minimum, as torch.maximum.
Value MaxMin(Builder& b, Value x, Value y, bool is_max) {
  Value m = is_max ? b.Max(x, y) : b.Min(x, y);
  if (!hlo::IsFloat(x.dtype())) return m;
  Value nan = b.Constant(Literal::Float(NAN), x.dtype(), x.shape());
  return b.Select(Or(b, IsNan(b, x), IsNan(b, y)), nan, m);
}

// NaN-ignoring fmax/fmin.
Value FMaxMin(Builder& b, Value x, Value y, bool is_max) {
  Value m = is_max ? b.Max(x, y) : b.Min(x, y);
  if (!hlo::IsFloat(x.dtype())) return m;
  return b.Select(IsNan(b, x), y, b.Select(IsNan(b, y), x, m));
}

Value Round(Builder& b, Value x) {
  return hlo::IsFloat(x.dtype()) ? b.Unary("round_nearest_even", x) : x;
}

// Integer power with PyTorch's CPU semantics: square-and-multiply over every
// bit of the exponent, wrapping in the element type; a negative exponent gives
// 1 for a base of 1, +-1 for -1 (by parity) and 0 otherwise. XLA's own integer
// power only walks the exponent's low 6 bits, so 67 ** 67 came out as 67 ** 3.
// Multiplication modulo 2^n is associative, so the order of the products does
// not change the wrapped result.
Value IntegerPow(Builder& b, Value x, Value y) {
  const int bits = static_cast<int>(hlo::DTypeSize(x.dtype()) * 8);
  const int steps = hlo::IsSignedInt(x.dtype()) ? bits - 1 : bits;
  Value zero = SplatInt(b, 0, y);
  Value one = SplatInt(b, 1, y);
  Value acc = SplatInt(b, 1, x);
  Value base = x;
  Value rest = y;
  for (int i = 0; i < steps; ++i) {
    Value bit = b.Cmp(b.Binary("and", rest, one), zero, Compare::kNE);
    acc = b.Select(bit, b.Mul(acc, base), acc);
    if (i + 1 == steps) break;
    base = b.Mul(base, base);
    rest = b.Binary("shift_right_logical", rest, one);
  }
  if (!hlo::IsSignedInt(x.dtype())) return acc;
  Value minus_one = SplatInt(b, -1, x);
  Value odd = b.Cmp(b.Binary("and", y, one), zero, Compare::kNE);
  Value negative_power =
      b.Select(b.Cmp(x, SplatInt(b, 1, x), Compare::kEQ), SplatInt(b, 1, x),
               b.Select(b.Cmp(x, minus_one, Compare::kEQ), b.Select(odd, minus_one, SplatInt(b, 1, x)),
                        SplatInt(b, 0, x)));
  return b.Select(b.Cmp(y, zero, Compare::kLT), negative_power, acc);
}

Value Pow(Builder& b, Value x, Value y) {
  if (hlo::IsInteger(x.dtype()) && x.dtype() != DType::kBool && x.dtype() == y.dtype()) return IntegerPow(b, x, y);
  return b.Binary("power", x, y);
}

Value Shift(Builder& b, Value x, Value y, bool left) {
  // PyTorch: shifting by >= bit width gives 0 (or -1 for negative >> ).
  const char* op = left ? "shift_left" : (hlo::IsSignedInt(x.dtype()) ? "shift_right_arithmetic" : "shift_right_logical");
  return b.Binary(op, x, y);
}

const std::map<std::string, Fn>& Table() {
  static const std::map<std::string, Fn> table = {
      // --- binary arithmetic
      {"add", [](Builder& b, const graph::Node& n, const Values& v) {
         if (v.size() == 3) return b.Add(v[0], b.Mul(v[2], v[1]));  // alpha
         return v[0].dtype() == DType::kBool ? Or(b, v[0], v[1]) : b.Add(v[0], v[1]);
       }},
      {"sub", [](Builder& b, const graph::Node& n, const Values& v) {
         if (v.size() == 3) return b.Sub(v[0], b.Mul(v[2], v[1]));
         return b.Sub(v[0], v[1]);
       }},
      {"mul", [](Builder& b, const graph::Node&, const Values& v) {
         return v[0].dtype() == DType::kBool ? And(b, v[0], v[1]) : b.Mul(v[0], v[1]);
       }},
      {"div", [](Builder& b, const graph::Node& n, const Values& v) {
         const std::string& mode = n.StrAttr(2);
         if (mode == "trunc") return Trunc(b, b.Div(v[0], v[1]));
         if (mode == "floor") return FloorDiv(b, v[0], v[1]);
         return b.Div(v[0], v[1]);
       }},
      {"floor_divide", [](Builder& b, const graph::Node&, const Values& v) { return FloorDiv(b, v[0], v[1]); }},
      {"remainder", [](Builder& b, const graph::Node&, const Values& v) { return Remainder(b, v[0], v[1]); }},
      {"fmod", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("remainder", v[0], v[1]); }},
      {"pow", [](Builder& b, const graph::Node&, const Values& v) { return Pow(b, v[0], v[1]); }},
      {"atan2", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("atan2", v[0], v[1]); }},
      {"maximum", [](Builder& b, const graph::Node&, const Values& v) { return MaxMin(b, v[0], v[1], true); }},
      {"minimum", [](Builder& b, const graph::Node&, const Values& v) { return MaxMin(b, v[0], v[1], false); }},
      {"fmax", [](Builder& b, const graph::Node&, const Values& v) { return FMaxMin(b, v[0], v[1], true); }},
      {"fmin", [](Builder& b, const graph::Node&, const Values& v) { return FMaxMin(b, v[0], v[1], false); }},
      {"hypot", [](Builder& b, const graph::Node&, const Values& v) {
         return b.Unary("sqrt", b.Add(b.Mul(v[0], v[0]), b.Mul(v[1], v[1])));
       }},
      {"bitwise_and", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("and", v[0], v[1]); }},
      {"bitwise_or", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("or", v[0], v[1]); }},
      {"bitwise_xor", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("xor", v[0], v[1]); }},
      {"bitwise_left_shift", [](Builder& b, const graph::Node&, const Values& v) { return Shift(b, v[0], v[1], true); }},
      {"bitwise_right_shift", [](Builder& b, const graph::Node&, const Values& v) { return Shift(b, v[0], v[1], false); }},
      {"logical_and", [](Builder& b, const graph::Node&, const Values& v) { return And(b, v[0], v[1]); }},
      {"logical_or", [](Builder& b, const graph::Node&, const Values& v) { return Or(b, v[0], v[1]); }},
      {"logical_xor", [](Builder& b, const graph::Node&, const Values& v) { return b.Binary("xor", v[0], v[1]); }},
      {"eq", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kEQ); }},
      {"ne", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kNE); }},
      {"lt", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kLT); }},
      {"le", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kLE); }},
      {"gt", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kGT); }},
      {"ge", [](Builder& b, const graph::Node&, const Values& v) { return b.Cmp(v[0], v[1], Compare::kGE); }},
      {"copysign", [](Builder& b, const graph::Node&, const Values& v) {
         Value mag = b.Unary("abs", v[0]);
         return b.Select(SignBit(b, v[1]), b.Unary("negate", mag), mag);
       }},
      {"logaddexp", [](Builder& b, const graph::Node&, const Values& v) {
         if (hlo::IsComplex(v[0].dtype())) return ComplexLogAddExp(b, v[0], v[1]);
         // max + log1p(exp(-|a - b|)); equal infinities return themselves.
         Value m = b.Max(v[0], v[1]);
         Value d = b.Unary("negate", b.Unary("abs", b.Sub(v[0], v[1])));
         Value r = b.Add(m, b.Unary("log_plus_one", b.Unary("exponential", d)));
         Value same_inf = And(b, b.Unary("chlo.is_inf", v[0]), b.Cmp(v[0], v[1], Compare::kEQ));
         return b.Select(same_inf, v[0], r);
       }},
      {"logaddexp2", [](Builder& b, const graph::Node&, const Values& v) {
         // max + log2(1 + 2^-|a - b|); equal infinities return themselves.
         Value m = b.Max(v[0], v[1]);
         Value d = b.Unary("negate", b.Unary("abs", b.Sub(v[0], v[1])));
         Value ln2 = Splat(b, std::log(2.0), m);
         Value r = b.Add(m, b.Div(b.Unary("log_plus_one", b.Unary("exponential", b.Mul(d, ln2))), ln2));
         Value same_inf = And(b, b.Unary("chlo.is_inf", v[0]), b.Cmp(v[0], v[1], Compare::kEQ));
         return b.Select(same_inf, v[0], r);
       }},
      {"xlogy", [](Builder& b, const graph::Node&, const Values& v) {
         Value r = b.Mul(v[0], b.Unary("log", v[1]));
         Value x_zero = And(b, b.Cmp(v[0], Splat(b, 0, v[0]), Compare::kEQ), Not(b, IsNan(b, v[1])));
         return b.Select(x_zero, Splat(b, 0, v[0]), r);
       }},
      // --- ternary
      {"where", [](Builder& b, const graph::Node&, const Values& v) { return b.Select(v[0], v[1], v[2]); }},
      {"lerp", [](Builder& b, const graph::Node&, const Values& v) {
         Value diff = b.Sub(v[1], v[0]);
         Value mag = b.Unary("abs", v[2]);  // real also for a complex weight
         Value small = b.Cmp(mag, Splat(b, 0.5, mag), Compare::kLT);
         return b.Select(small, b.Add(v[0], b.Mul(v[2], diff)),
                         b.Sub(v[1], b.Mul(diff, b.Sub(Splat(b, 1, v[2]), v[2]))));
       }},
      {"addcmul", [](Builder& b, const graph::Node&, const Values& v) {
         return b.Add(v[0], b.Mul(v[3], b.Mul(v[1], v[2])));
       }},
      {"addcdiv", [](Builder& b, const graph::Node&, const Values& v) {
         return b.Add(v[0], b.Mul(v[3], b.Div(v[1], v[2])));
       }},
      {"clamp", [](Builder& b, const graph::Node& n, const Values& v) {
         // attribute 2: which of min, max are present (bit 0, bit 1).
         int64_t mask = n.IntAttr(2);
         Value x = v[0];
         size_t next = 1;
         Value nan_in = IsNan(b, x);
         if (mask & 1) { Value lo = v[next++]; x = MaxMin(b, x, lo, true); }
         if (mask & 2) { Value hi = v[next++]; x = MaxMin(b, x, hi, false); }
         if (hlo::IsFloat(x.dtype())) x = b.Select(nan_in, v[0], x);
         return x;
       }},
      // --- unary, same dtype
      {"relu", [](Builder& b, const graph::Node&, const Values& v) {
         if (v[0].dtype() == DType::kBool) return v[0];
         return MaxMin(b, v[0], Splat(b, 0, v[0]), true);
       }},
      {"signbit", [](Builder& b, const graph::Node&, const Values& v) { return SignBit(b, v[0]); }},
      {"abs", [](Builder& b, const graph::Node&, const Values& v) {
         if (hlo::IsComplex(v[0].dtype())) {  // |z|: the part type
           // C's hypot, as the CPU's std::abs: an infinite part gives inf
           // (NaN in the other too), else a NaN part NaN; XLA's complex abs
           // passes over a NaN part (|0 + NaN i| = 0 on the CPU plugin).
           const DType part = hlo::ComplexPart(v[0].dtype());
           Value mag = b.Op("stablehlo.abs", {v[0]}, {hlo::TensorType{part, v[0].shape()}})[0];
           Value re = b.Unary("abs", b.Real(v[0])), im = b.Unary("abs", b.Imag(v[0]));
           Value inf = b.Constant(Literal::Float(INFINITY), part, v[0].shape());
           Value any_inf = Or(b, b.Cmp(re, inf, hlo::Compare::kEQ), b.Cmp(im, inf, hlo::Compare::kEQ));
           Value any_nan = Or(b, IsNan(b, re), IsNan(b, im));
           return b.Select(any_inf, inf, b.Select(any_nan, b.Constant(Literal::Float(NAN), part, v[0].shape()), mag));
         }
         // stablehlo.abs takes signless integers only; unsigned (and bool) values are their own magnitude.
         return hlo::IsUnsignedInt(v[0].dtype()) ? v[0] : b.Unary("abs", v[0]);
       }},
      {"neg", [](Builder& b, const graph::Node&, const Values& v) {
         // packed complex32 (a neg bit the copy resolves): both parts' signs flipped
         if (v[0].dtype() == DType::kC32) return FlipComplex32Signs(b, v[0], 0x80008000u);
         return b.Unary("negate", v[0]);
       }},
      {"sign", [](Builder& b, const graph::Node&, const Values& v) { return Sign(b, v[0]); }},
      {"sgn", [](Builder& b, const graph::Node&, const Values& v) { return Sign(b, v[0]); }},
      {"floor", [](Builder& b, const graph::Node&, const Values& v) {
         return hlo::IsFloat(v[0].dtype()) ? b.Unary("floor", v[0]) : v[0];
       }},
      {"ceil", [](Builder& b, const graph::Node&, const Values& v) {
         return hlo::IsFloat(v[0].dtype()) ? b.Unary("ceil", v[0]) : v[0];
       }},
      {"round", [](Builder& b, const graph::Node& n, const Values& v) {
         int64_t decimals = n.IntAttr(2);
         if (decimals == 0 || !hlo::IsFloat(v[0].dtype())) return Round(b, v[0]);
         // As PyTorch: scale by 10^decimals (or divide for negative decimals).
         double ten = std::pow(10.0, static_cast<double>(std::abs(decimals)));
         Value s = Splat(b, ten, v[0]);
         if (decimals > 0) return b.Div(Round(b, b.Mul(v[0], s)), s);
         return b.Mul(Round(b, b.Div(v[0], s)), s);
       }},
      {"trunc", [](Builder& b, const graph::Node&, const Values& v) { return Trunc(b, v[0]); }},
      {"frac", [](Builder& b, const graph::Node&, const Values& v) { return b.Sub(v[0], Trunc(b, v[0])); }},
      {"bitwise_not", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("not", v[0]); }},
      {"logical_not", [](Builder& b, const graph::Node&, const Values& v) { return Not(b, v[0]); }},
      {"nan_to_num", [](Builder& b, const graph::Node& n, const Values& v) {
         Value x = v[0];
         if (!hlo::IsFloat(x.dtype())) return x;
         Value nan = Splat(b, n.FloatAttr(2), x);
         Value pinf = Splat(b, n.FloatAttr(3), x);
         Value ninf = Splat(b, n.FloatAttr(4), x);
         Value inf = b.Constant(Literal::Float(INFINITY), x.dtype(), x.shape());
         Value minus_inf = b.Constant(Literal::Float(-INFINITY), x.dtype(), x.shape());
         x = b.Select(IsNan(b, x), nan, x);
         x = b.Select(b.Cmp(x, inf, Compare::kEQ), pinf, x);
         return b.Select(b.Cmp(x, minus_inf, Compare::kEQ), ninf, x);
       }},
      // --- unary, floating result
      {"exp", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("exponential", v[0]); }},
      {"exp2", [](Builder& b, const graph::Node&, const Values& v) { return Pow(b, Splat(b, 2, v[0]), v[0]); }},
      {"expm1", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("exponential_minus_one", v[0]); }},
      {"log", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("log", v[0]); }},
      {"log2", [](Builder& b, const graph::Node&, const Values& v) {
         return b.Div(b.Unary("log", v[0]), Splat(b, std::log(2.0), v[0]));
       }},
      {"log10", [](Builder& b, const graph::Node&, const Values& v) {
         return b.Div(b.Unary("log", v[0]), Splat(b, std::log(10.0), v[0]));
       }},
      {"log1p", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("log_plus_one", v[0]); }},
      {"sqrt", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("sqrt", v[0]); }},
      {"rsqrt", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("rsqrt", v[0]); }},
      {"reciprocal", [](Builder& b, const graph::Node&, const Values& v) { return b.Div(Splat(b, 1, v[0]), v[0]); }},
      {"sin", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("sine", v[0]); }},
      {"cos", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("cosine", v[0]); }},
      {"tan", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.tan", v[0]); }},
      {"asin", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.asin", v[0]); }},
      {"acos", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.acos", v[0]); }},
      {"atan", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.atan", v[0]); }},
      {"sinh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.sinh", v[0]); }},
      {"cosh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.cosh", v[0]); }},
      {"tanh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("tanh", v[0]); }},
      {"asinh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.asinh", v[0]); }},
      {"acosh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.acosh", v[0]); }},
      {"atanh", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.atanh", v[0]); }},
      {"sigmoid", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("logistic", v[0]); }},
      {"erf", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.erf", v[0]); }},
      {"lgamma", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.lgamma", v[0]); }},
      {"digamma", [](Builder& b, const graph::Node&, const Values& v) {
         // PyTorch: digamma(±0) = ∓inf (the pole's side), not NaN.
         Value zero = Splat(b, 0, v[0]);
         Value pole = b.Select(SignBit(b, v[0]), b.Constant(Literal::Float(INFINITY), v[0].dtype(), v[0].shape()),
                               b.Constant(Literal::Float(-INFINITY), v[0].dtype(), v[0].shape()));
         return b.Select(b.Cmp(v[0], zero, Compare::kEQ), pole, b.Unary("chlo.digamma", v[0]));
       }},
      {"sinc", [](Builder& b, const graph::Node&, const Values& v) {
         Value px = b.Mul(v[0], Splat(b, M_PI, v[0]));
         Value r = b.Div(b.Unary("sine", px), px);
         return b.Select(b.Cmp(v[0], Splat(b, 0, v[0]), Compare::kEQ), Splat(b, 1, v[0]), r);
       }},
      {"erfc", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.erfc", v[0]); }},
      {"erfinv", [](Builder& b, const graph::Node&, const Values& v) { return b.Unary("chlo.erf_inv", v[0]); }},
      // --- unary, boolean result
      {"isnan", [](Builder& b, const graph::Node&, const Values& v) { return IsNan(b, v[0]); }},
      {"isinf", [](Builder& b, const graph::Node&, const Values& v) {
         if (hlo::IsComplex(v[0].dtype())) {  // either part, as the CPU
           return Or(b, b.Unary("chlo.is_inf", b.Real(v[0])), b.Unary("chlo.is_inf", b.Imag(v[0])));
         }
         if (!hlo::IsFloat(v[0].dtype())) return b.Constant(Literal::Bool(false), DType::kBool, v[0].shape());
         return b.Unary("chlo.is_inf", v[0]);
       }},
      {"isposinf", [](Builder& b, const graph::Node&, const Values& v) {
         if (!hlo::IsFloat(v[0].dtype())) return b.Constant(Literal::Bool(false), DType::kBool, v[0].shape());
         return b.Unary("chlo.is_pos_inf", v[0]);
       }},
      {"isneginf", [](Builder& b, const graph::Node&, const Values& v) {
         if (!hlo::IsFloat(v[0].dtype())) return b.Constant(Literal::Bool(false), DType::kBool, v[0].shape());
         return b.Unary("chlo.is_neg_inf", v[0]);
       }},
      {"isfinite", [](Builder& b, const graph::Node&, const Values& v) {
         if (hlo::IsComplex(v[0].dtype())) {  // both parts, as the CPU
           return And(b, b.Unary("is_finite", b.Real(v[0])), b.Unary("is_finite", b.Imag(v[0])));
         }
         if (!hlo::IsFloat(v[0].dtype())) return b.Constant(Literal::Bool(true), DType::kBool, v[0].shape());
         return b.Unary("is_finite", v[0]);
       }},
  };
  return table;
}

// PyTorch's CPU mul and div (true, trunc and floor) on bf16/f16, when the
// second operand is a single broadcast value (a 0-dim tensor, a Python
// number, any one-element tensor), take that value as it was before the cast
// to the common dtype (TensorIterator's original_scalar_value) and compute in
// f32, rounding once: bf16 x * f32 0.7261761 multiplies by 0.7261761, not by
// its bf16 rounding 0.7265625. Elsewhere the operands are cast first.
DType ScalarOperandCompute(const graph::Node& n, const Values& in, DType compute) {
  if (compute != DType::kBF16 && compute != DType::kF16) return compute;
  if (n.op != "ew.mul" && n.op != "ew.div") return compute;
  if (in.size() != 2 || in[1].type.numel() != 1) return compute;
  return DType::kF32;
}

bool RegisterAll() {
  for (const auto& [name, fn] : Table()) {
    graph::RegisterLowering("ew." + name, [fn = fn](Builder& b, const graph::Node& n, const Values& in) {
      DType compute = static_cast<DType>(n.IntAttr(0));
      DType result = static_cast<DType>(n.IntAttr(1));
      // where's condition stays boolean; everything else computes in `compute`.
      Values operands;
      if (n.op == "ew.where") {
        Values rest = Harmonize(b, {in[1], in[2]}, compute);
        hlo::Shape shape = BroadcastShapes({in[0].shape(), rest[0].shape()});
        operands = {b.BroadcastTo(b.Convert(in[0], DType::kBool), shape), b.BroadcastTo(rest[0], shape),
                    b.BroadcastTo(rest[1], shape)};
      } else {
        operands = Harmonize(b, in, ScalarOperandCompute(n, in, compute));
      }
      // No elements: no ops. (The plugin's StableHLO folder treats an empty
      // operand as a zero splat and folds an integer remainder by it with a
      // hardware division: SIGFPE at compile time, torch.fmod of two empty
      // int tensors.)
      std::vector<hlo::Shape> shapes;
      for (const Value& v : operands) shapes.push_back(v.shape());
      const hlo::Shape shape = BroadcastShapes(shapes);
      if (hlo::TensorType{result, shape}.numel() == 0) return Values{b.Constant(Literal::Int(0), result, shape)};
      return Values{b.Convert(fn(b, n, operands), result)};
    });
  }
  return true;
}

const bool registered = RegisterAll();

}  // namespace

bool HasElementwiseLowering(const std::string& name) { return Table().count(name) > 0; }

}  // namespace torchtpu::lower
