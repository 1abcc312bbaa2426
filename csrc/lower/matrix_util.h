// Helpers of the matrix decompositions (lower/linalg_decomp.cpp,
// lower/linalg_eig.cpp, lower/linalg_factor.cpp), which work on batches of matrices flattened to
// [batch, rows, cols]: lines read and written with dynamic slices, the
// identity, shapes with a new trailing matrix or vector. Torch-free.
#pragma once

#include "lower/lower_util.h"

namespace torchtpu::lower {

// Machine epsilon of the matrix dtype: 2^-52 for f64, 2^-23 (float32) otherwise.
double Epsilon(DType t);

// Line i of x [batch, r, c] along `axis` (1: row i as [batch, c]; 2: column
// i as [batch, r]), read and written with dynamic slices.
enum Axis : int { kRowAxis = 1, kColumnAxis = 2 };
Value Line(Builder& b, Value x, Axis axis, Value i);
Value SetLine(Builder& b, Value x, Axis axis, Value line, Value i);

// The identity's first `cols` columns, [batch, rows, cols].
Value Eye(Builder& b, DType t, int64_t batch, int64_t rows, int64_t cols);

// The complex conjugate of x (x itself when real), and |x|^2 as a real value.
Value Conj(Builder& b, Value x);
Value AbsSquared(Builder& b, Value x);

// The number of matrices in x [..., r, c].
int64_t Batch(const Value& x);
// `full`'s batch dimensions followed by a matrix, or by a vector.
hlo::Shape WithMatrix(const hlo::Shape& full, int64_t rows, int64_t cols);
hlo::Shape WithVector(const hlo::Shape& full, int64_t len);

}  // namespace torchtpu::lower
