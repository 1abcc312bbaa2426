// Helpers shared by the lowerings that index along a dimension (index.cpp,
// scatter_reduce.cpp): the device-side range check the kernels ask for with
// OpCall::CheckIndices (aten/runtime/index_checks.h), negative index
// wrapping, and the index tuples of a gather/scatter along one dimension.
// Torch-free.
#pragma once

#include <limits>
#include <optional>

#include "graph/node.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {

// Check modes, as the kernels pass them (aten/runtime/index_checks.h).
constexpr int64_t kCheckOff = 0;
constexpr int64_t kCheckNonNegative = 1;  // valid: [0, size)
constexpr int64_t kCheckWrapNegative = 2; // valid: [-size, size)

inline int64_t CheckMode(const graph::Node& n, size_t attr) {
  return n.attrs.size() > attr ? n.IntAttr(attr) : kCheckOff;
}

// The first out-of-range index over every index tensor of one op, as scalars.
class RangeCheck {
 public:
  RangeCheck(Builder& b, int64_t mode) : b_(b), mode_(mode) {}

  void Add(Value idx, int64_t dim, int64_t size) {
    if (mode_ == kCheckOff || idx.type.numel() == 0) return;
    const int64_t numel = idx.type.numel();
    Value flat = b_.Reshape(b_.Convert(idx, DType::kI64), {numel});
    Value lo = b_.Constant(Literal::Int(mode_ == kCheckWrapNegative ? -size : 0), DType::kI64, {numel});
    Value hi = b_.Constant(Literal::Int(size), DType::kI64, {numel});
    Value bad = Or(b_, b_.Cmp(flat, lo, hlo::Compare::kLT), b_.Cmp(flat, hi, hlo::Compare::kGE));
    // Position of the first bad element (numel when none), then its value.
    Value iota = b_.Iota(hlo::TensorType{DType::kI64, {numel}}, 0);
    Value none = b_.Constant(Literal::Int(numel), DType::kI64, {numel});
    Value first = ReduceWith(b_, b_.Select(bad, iota, none), {0}, "minimum",
                             Literal::Int(std::numeric_limits<int64_t>::max()));
    Value at_first = b_.Cmp(iota, b_.BroadcastTo(first, {numel}), hlo::Compare::kEQ);
    Value value = ReduceWith(b_, b_.Select(at_first, flat, b_.Constant(Literal::Int(0), DType::kI64, {numel})),
                             {0}, "add", Literal::Int(0));
    Value found = b_.Cmp(first, b_.Constant(Literal::Int(numel), DType::kI64, {}), hlo::Compare::kLT);
    Value dim_v = b_.Constant(Literal::Int(dim), DType::kI64, {});
    Value size_v = b_.Constant(Literal::Int(size), DType::kI64, {});
    if (!found_) {
      found_ = found, value_ = value, dim_ = dim_v, size_ = size_v;
      return;
    }
    // An earlier index tensor's failure wins.
    value_ = b_.Select(*found_, *value_, value);
    dim_ = b_.Select(*found_, *dim_, dim_v);
    size_ = b_.Select(*found_, *size_, size_v);
    found_ = Or(b_, *found_, found);
  }

  // The op's results, with the check appended when one was asked for.
  Values Finish(Values results) {
    if (mode_ == kCheckOff) return results;
    if (!found_) {
      results.push_back(b_.Constant(Literal::Int(0), DType::kI64, {4}));
      return results;
    }
    Values parts;
    for (Value v : {b_.Convert(*found_, DType::kI64), *value_, *dim_, *size_}) parts.push_back(b_.Reshape(v, {1}));
    results.push_back(b_.Concatenate(parts, 0));
    return results;
  }

 private:
  Builder& b_;
  int64_t mode_;
  std::optional<Value> found_, value_, dim_, size_;
};


// Wraps negative indices: i < 0 -> i + size.
inline Value WrapIndex(Builder& b, Value idx, int64_t size) {
  idx = b.Convert(idx, DType::kI64);
  Value zero = b.Constant(Literal::Int(0), DType::kI64, idx.shape());
  Value n = b.Constant(Literal::Int(size), DType::kI64, idx.shape());
  return b.Select(b.Cmp(idx, zero, hlo::Compare::kLT), b.Add(idx, n), idx);
}

// Index tuples for gather/scatter along `dim`: [..index shape.., rank].
inline Value DimTuples(Builder& b, Value index, int64_t dim, int64_t rank, int64_t dim_size) {
  hlo::Shape s = index.shape();
  hlo::Shape col = s;
  col.push_back(1);
  Values parts;
  for (int64_t d = 0; d < rank; ++d) {
    Value v = d == dim ? WrapIndex(b, index, dim_size) : b.Iota(hlo::TensorType{DType::kI64, s}, d);
    parts.push_back(b.Reshape(v, col));
  }
  return b.Concatenate(parts, static_cast<int64_t>(s.size()));
}

}  // namespace torchtpu::lower
