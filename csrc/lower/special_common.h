// Registration shared by the elementwise special-function lowerings that live
// in their own files (special_polynomial.cpp, special_bessel.cpp, igamma.cpp),
// with the node convention of lower/special.cpp: "special.<op>", attribute
// 0 = compute dtype, 1 = result dtype; operands converted to the compute
// dtype and broadcast; f16/bf16 computed in f32 and rounded once at the end.
#pragma once

#include <cmath>
#include <functional>
#include <string>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower::special {

using Fn = std::function<Value(Builder&, const Values&)>;

inline Value C(Builder& b, double v, const Value& like) { return Splat(b, v, like); }
inline Value Nan(Builder& b, const Value& like) {
  return b.Constant(Literal::Float(NAN), like.dtype(), like.shape());
}
inline Value Inf(Builder& b, const Value& like, bool negative = false) {
  return b.Constant(Literal::Float(negative ? -INFINITY : INFINITY), like.dtype(), like.shape());
}
inline bool IsF64(const Value& x) { return x.dtype() == DType::kF64; }

// True when any element of the predicate `p` is true (a rank-0 i1).
inline Value Any(Builder& b, const Value& p) {
  std::vector<int64_t> dims;
  for (size_t i = 0; i < p.shape().size(); ++i) dims.push_back(static_cast<int64_t>(i));
  return ReduceWith(b, p, dims, "or", Literal::Bool(false));
}

inline bool Register(const std::string& op, Fn fn) {
  graph::RegisterLowering("special." + op, [fn](Builder& b, const graph::Node& n, const Values& in) {
    DType compute = static_cast<DType>(n.IntAttr(0));
    DType result = static_cast<DType>(n.IntAttr(1));
    Values operands = Harmonize(b, in, compute);
    if (compute == DType::kF16 || compute == DType::kBF16) {
      for (Value& v : operands) v = b.Convert(v, DType::kF32);
    }
    return Values{b.Convert(fn(b, operands), result)};
  });
  return true;
}

}  // namespace torchtpu::lower::special
