// The three FFT primitives every torch.fft function reduces to (ATen's
// _fft_c2c, _fft_r2c, _fft_c2r), on StableHLO's `fft` op.
//
// PyTorch's primitives are unnormalised transforms over any list of dims,
// followed by a scale (none, 1/sqrt(n) or 1/n over the signal size n).
// stablehlo.fft transforms only the trailing 1 to 3 dims, and its inverse
// forms (IFFT, IRFFT) already divide by their length. So each lowering moves
// the transformed dims to the back (in the order given, the last one being
// the half-spectrum dim of r2c/c2r), transforms them at most three at a time
// (the transforms are separable), applies PyTorch's scale with the inverse's
// own 1/n undone (one multiply, none for the default norm) and moves the dims
// back.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

// PyTorch's fft_norm_mode.
enum class Norm : int64_t { kNone = 0, kByRootN = 1, kByN = 2 };

// Where the transformed dims go: `perm` moves `dims` to the back in order.
struct Layout {
  std::vector<int64_t> perm;
  std::vector<int64_t> inverse;
};

Layout MoveToBack(int64_t rank, const std::vector<int64_t>& dims) {
  Layout l;
  std::vector<bool> moved(rank, false);
  for (int64_t d : dims) moved[d] = true;
  for (int64_t d = 0; d < rank; ++d) {
    if (!moved[d]) l.perm.push_back(d);
  }
  l.perm.insert(l.perm.end(), dims.begin(), dims.end());
  l.inverse.assign(rank, 0);
  for (int64_t i = 0; i < rank; ++i) l.inverse[l.perm[i]] = i;
  return l;
}

bool Identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Value Permute(Builder& b, Value x, const std::vector<int64_t>& perm) {
  return Identity(perm) ? x : b.Transpose(x, perm);
}

// One stablehlo.fft over the trailing `lengths.size()` (1 to 3) dims.
Value Fft(Builder& b, Value x, const char* type, const std::vector<int64_t>& lengths, const hlo::TensorType& result) {
  std::string attr = std::string("{fft_type = #stablehlo<fft_type ") + type + ">, fft_length = array<i64";
  for (size_t i = 0; i < lengths.size(); ++i) attr += (i == 0 ? ": " : ", ") + std::to_string(lengths[i]);
  attr += ">}";
  return b.Op("stablehlo.fft", {x}, {result}, attr)[0];
}

// PyTorch's scale over signal size n, times `undo` (what XLA's inverse
// transforms divided by), as one multiply, none when it is 1.
Value Normalize(Builder& b, Value x, Norm norm, double n, double undo) {
  double scale = undo;
  if (norm == Norm::kByN && n != 0) scale /= n;
  if (norm == Norm::kByRootN && n != 0) scale /= std::sqrt(n);
  if (scale == 1.0) return x;
  return b.Mul(x, b.Full(hlo::Literal::Float(scale), x));
}

double SignalSize(const hlo::Shape& shape, const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(shape[d]);
  return n;
}

std::vector<int64_t> NormalDims(const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(Dim(d, rank));
  return out;
}

// Complex transforms over dims [rank-count, rank) of x, at most three at a
// time (each chunk moved to the back and back again). An inverse chunk comes
// back divided by its length (XLA's IFFT): `*divided` is multiplied by it, for
// the caller to fold into PyTorch's own scale.
Value C2cBack(Builder& b, Value x, int64_t count, bool forward, double* divided) {
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  int64_t remaining = count;  // untransformed dims are [rank-count, rank-count+remaining)
  while (remaining > 0) {
    const int64_t k = std::min<int64_t>(3, remaining);
    std::vector<int64_t> chunk(k);
    std::iota(chunk.begin(), chunk.end(), rank - count + remaining - k);
    Layout l = MoveToBack(rank, chunk);
    Value moved = Permute(b, x, l.perm);
    std::vector<int64_t> lengths(moved.shape().end() - k, moved.shape().end());
    moved = Fft(b, moved, forward ? "FFT" : "IFFT", lengths, moved.type);
    if (!forward) {
      for (int64_t len : lengths) *divided *= static_cast<double>(len);
    }
    x = Permute(b, moved, l.inverse);
    remaining -= k;
  }
  return x;
}

// Complex transforms over the trailing `count` dims but the last (the
// half-spectrum dim of r2c/c2r): that dim is rotated to the front of the
// block, out of C2cBack's way, and back.
Value C2cAllButLast(Builder& b, Value x, int64_t count, bool forward, double* divided) {
  if (count <= 1) return x;
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  std::vector<int64_t> perm(rank);
  std::iota(perm.begin(), perm.end(), 0);
  std::rotate(perm.end() - count, perm.end() - 1, perm.end());
  Value rotated = C2cBack(b, b.Transpose(x, perm), count - 1, forward, divided);
  std::vector<int64_t> back(rank);
  for (int64_t i = 0; i < rank; ++i) back[perm[i]] = i;
  return b.Transpose(rotated, back);
}

// _fft_c2c: attrs: 0 dims, 1 normalization, 2 forward. inputs: complex x.
REGISTER_LOWERING("fft.c2c", [](Builder& b, const graph::Node& n, const Values& in) {
  Value x = in[0];
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const std::vector<int64_t> dims = NormalDims(n.IntsAttr(0), rank);
  if (dims.empty()) return Values{x};
  const Layout l = MoveToBack(rank, dims);
  double divided = 1;
  Value y = C2cBack(b, Permute(b, x, l.perm), static_cast<int64_t>(dims.size()), n.BoolAttr(2), &divided);
  y = Normalize(b, y, static_cast<Norm>(n.IntAttr(1)), SignalSize(x.shape(), dims), divided);
  return Values{Permute(b, y, l.inverse)};
});

// _fft_r2c: attrs: 0 dims, 1 normalization, 2 onesided. inputs: real x
// (f32/f64). result: complex, the last of `dims` n/2+1 long when onesided.
REGISTER_LOWERING("fft.r2c", [](Builder& b, const graph::Node& n, const Values& in) {
  Value x = in[0];
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const std::vector<int64_t> dims = NormalDims(n.IntsAttr(0), rank);
  const Layout l = MoveToBack(rank, dims);
  Value moved = Permute(b, x, l.perm);
  const int64_t count = static_cast<int64_t>(dims.size());
  const DType complex = hlo::ComplexOf(x.dtype());
  double divided = 1;  // forward transforms divide by nothing
  Value y;
  if (n.BoolAttr(2)) {
    // RFFT over the last dim, then the complex transform over the others.
    hlo::Shape half = moved.shape();
    const int64_t last = half.back();
    half.back() = last / 2 + 1;
    y = Fft(b, moved, "RFFT", {last}, hlo::TensorType{complex, half});
    y = C2cAllButLast(b, y, count, /*forward=*/true, &divided);
  } else {
    y = C2cBack(b, b.Convert(moved, complex), count, /*forward=*/true, &divided);
  }
  y = Normalize(b, y, static_cast<Norm>(n.IntAttr(1)), SignalSize(x.shape(), dims), divided);
  return Values{Permute(b, y, l.inverse)};
});

// _fft_c2r: attrs: 0 dims, 1 normalization, 2 last_dim_size (the real
// output's length along the last of `dims`). inputs: complex x whose last
// transformed dim holds at least last_dim_size/2+1 values (only those are
// read, as on the CPU). result: real of the part type.
REGISTER_LOWERING("fft.c2r", [](Builder& b, const graph::Node& n, const Values& in) {
  Value x = in[0];
  const int64_t rank = static_cast<int64_t>(x.shape().size());
  const std::vector<int64_t> dims = NormalDims(n.IntsAttr(0), rank);
  const int64_t out_last = n.IntAttr(2);
  const Layout l = MoveToBack(rank, dims);
  Value moved = Permute(b, x, l.perm);
  const int64_t count = static_cast<int64_t>(dims.size());
  if (moved.shape().back() > out_last / 2 + 1) moved = b.SliceDim(moved, rank - 1, 0, out_last / 2 + 1);
  double divided = static_cast<double>(out_last);  // by the IRFFT below
  moved = C2cAllButLast(b, moved, count, /*forward=*/false, &divided);  // before the IRFFT
  hlo::Shape real_shape = moved.shape();
  real_shape.back() = out_last;
  const DType part = hlo::ComplexPart(x.dtype());
  Value y = Fft(b, moved, "IRFFT", {out_last}, hlo::TensorType{part, real_shape});
  hlo::Shape signal = x.shape();
  signal[dims.back()] = out_last;
  y = Normalize(b, y, static_cast<Norm>(n.IntAttr(1)), SignalSize(signal, dims), divided);
  return Values{Permute(b, y, l.inverse)};
});

}  // namespace
}  // namespace torchtpu::lower
