#include "lower/lower_util.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace torchtpu::lower {

hlo::Shape BroadcastShapes(const std::vector<hlo::Shape>& shapes) {
  size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.size());
  hlo::Shape out(rank, 1);
  for (const auto& s : shapes) {
    size_t offset = rank - s.size();
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[offset + i];
      if (s[i] == 1) continue;
      if (o != 1 && o != s[i]) {
        throw hlo::BuildError("shapes cannot be broadcast together (size " + std::to_string(o) +
                              " vs " + std::to_string(s[i]) + " at dimension " +
                              std::to_string(offset + i) + ")");
      }
      o = s[i];
    }
  }
  return out;
}

Values Harmonize(Builder& b, const Values& xs, DType dtype) {
  std::vector<hlo::Shape> shapes;
  for (const Value& x : xs) shapes.push_back(x.shape());
  hlo::Shape shape = BroadcastShapes(shapes);
  Values out;
  for (const Value& x : xs) out.push_back(b.BroadcastTo(b.Convert(x, dtype), shape));
  return out;
}

Value IsNan(Builder& b, Value x) {
  if (hlo::IsComplex(x.dtype())) return Or(b, IsNan(b, b.Real(x)), IsNan(b, b.Imag(x)));  // either part
  if (!hlo::IsFloat(x.dtype())) return b.Constant(Literal::Bool(false), DType::kBool, x.shape());
  return b.Cmp(x, x, hlo::Compare::kNE);
}

Value Not(Builder& b, Value p) { return b.Unary("not", p); }
Value And(Builder& b, Value p, Value q) { return b.Binary("and", p, q); }
Value Or(Builder& b, Value p, Value q) { return b.Binary("or", p, q); }

Value FlipComplex32Signs(Builder& b, Value x, uint32_t mask) {
  Value bits = b.BitcastConvert(x, DType::kU32);
  bits = b.Binary("xor", bits, b.Constant(Literal::Int(mask), DType::kU32, bits.shape()));
  return b.BitcastConvert(bits, DType::kC32);
}

int64_t Dim(int64_t dim, int64_t rank) {
  int64_t r = std::max<int64_t>(rank, 1);
  if (dim < -r || dim >= r) {
    throw hlo::BuildError("dimension " + std::to_string(dim) + " out of range for rank " + std::to_string(rank));
  }
  return dim < 0 ? dim + r : dim;
}

Value ReduceWith(Builder& b, Value x, const std::vector<int64_t>& dims, const char* op, const Literal& init) {
  Value zero = b.Constant(init, x.dtype(), {});
  std::string name = op;
  return b.Reduce({x}, {zero}, dims, [name](Builder& rb, const Values& a) {
    return Values{rb.Binary(name, a[0], a[1])};
  })[0];
}

DType AccumulateType(DType dtype) {
  return (dtype == DType::kBF16 || dtype == DType::kF16 || hlo::IsFloat8(dtype)) ? DType::kF32 : dtype;
}

}  // namespace torchtpu::lower
