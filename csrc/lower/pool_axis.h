// Per-axis helpers of the pooling and interpolation lowerings: each of these
// ops works one spatial dimension at a time with tables (indices, weights,
// bin sizes) computed on the host from the op's geometry.
#pragma once

#include <vector>

#include "lower/lower_util.h"

namespace torchtpu::lower {

// x with dimension `dim` replaced by x's rows at `idx` (a gather).
Value TakeAlong(Builder& b, Value x, int64_t dim, const std::vector<int64_t>& idx);
// Contracts dimension `dim` (size in) of x with the row-major [in, out]
// matrix `m`; the result has size `out` at `dim`.
Value MatrixAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& m, int64_t out);
// x multiplied / divided by factors[i] at index i of dimension `dim`.
Value MulAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& factors);
Value DivAlong(Builder& b, Value x, int64_t dim, const std::vector<double>& divisors);
// Sums of the bins [start[o], start[o] + size[o]) of dimension `dim`.
Value BinSumAlong(Builder& b, Value x, int64_t dim, const std::vector<int64_t>& start,
                  const std::vector<int64_t>& size);

}  // namespace torchtpu::lower
