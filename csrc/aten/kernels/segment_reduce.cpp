// _segment_reduce and its backward on tpu, composed from native ops: each
// position along `axis` gets its segment's number (a searchsorted of the
// position in the running sum of the lengths), and the reduction is one
// scatter_reduce into a tensor that starts at `initial` (or the reduction's
// identity). Empty segments give what the CPU gives: initial, or 0 (sum),
// 1 (prod), NaN (mean), -inf (max), inf (min). Floating dtypes, as the CPU.
#include <ATen/ATen.h>

#include <limits>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

enum class Reduce { kSum, kProd, kMean, kMax, kMin };

Reduce ParseReduce(c10::string_view r) {
  if (r == "sum") return Reduce::kSum;
  if (r == "prod") return Reduce::kProd;
  if (r == "mean") return Reduce::kMean;
  if (r == "max" || r == "amax") return Reduce::kMax;
  if (r == "min" || r == "amin") return Reduce::kMin;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", r);
}

// The lengths, from `lengths` or from consecutive differences of `offsets`.
at::Tensor Lengths(const std::optional<at::Tensor>& lengths, const std::optional<at::Tensor>& offsets) {
  // Autograd passes an absent argument as an undefined tensor.
  const bool have_lengths = lengths.has_value() && lengths->defined();
  TORCH_CHECK(have_lengths || (offsets.has_value() && offsets->defined()), "Either lengths or offsets must be defined");
  if (have_lengths) return *lengths;
  const int64_t n = offsets->size(-1);
  return offsets->narrow(-1, 1, n - 1) - offsets->narrow(-1, 0, n - 1);
}

// The segment of every position along `axis`: ids [lead..., N] with lead =
// lengths' leading dims (data's dims before axis). Positions past the last
// segment (unsafe input) get `segments`, a spare row dropped afterwards.
at::Tensor SegmentIds(const at::Tensor& lengths, int64_t n) {
  at::Tensor ends = lengths.to(c10::kLong).cumsum(-1);
  std::vector<int64_t> shape(lengths.sizes().begin(), lengths.sizes().end() - 1);
  shape.push_back(n);
  at::Tensor pos = at::arange(n, ends.options()).expand(shape).contiguous();
  return at::searchsorted(ends, pos, /*out_int32=*/false, /*right=*/true);
}

// ids broadcast over data's trailing dims: [lead..., N, rest...].
at::Tensor Spread(const at::Tensor& ids, const at::Tensor& data) {
  at::Tensor x = ids;
  while (x.dim() < data.dim()) x = x.unsqueeze(-1);
  return x.expand(data.sizes());
}

std::vector<int64_t> OutShape(const at::Tensor& data, int64_t axis, int64_t segments) {
  std::vector<int64_t> s = data.sizes().vec();
  s[axis] = segments;
  return s;
}

void CheckArgs(const at::Tensor& data, const at::Tensor& lengths, int64_t axis, bool unsafe) {
  TORCH_CHECK_NOT_IMPLEMENTED(at::isFloatingType(data.scalar_type()), "\"_segment_reduce_cpu\" not implemented for '",
                              c10::toString(data.scalar_type()), "'");
  TORCH_CHECK(lengths.dim() == axis + 1, "Expected lengths to have ", axis + 1, " dimensions (axis + 1), got ",
              lengths.dim());
  if (!unsafe) {
    // One host read, as the CPU's and CUDA's checks.
    TORCH_CHECK((lengths >= 0).all().item<bool>(), "lengths contains negative value!");
    TORCH_CHECK((lengths.to(c10::kLong).sum(-1) == data.size(axis)).all().item<bool>(),
                "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when "
                "!unsafe.");
  }
}

at::Tensor SegmentReduce(const at::Tensor& data, c10::string_view reduce_name, const std::optional<at::Tensor>& lengths_arg,
                         const std::optional<at::Tensor>& indices, const std::optional<at::Tensor>& offsets,
                         int64_t axis, bool unsafe, const std::optional<at::Scalar>& initial) {
  const Reduce reduce = ParseReduce(reduce_name);
  TORCH_CHECK(!indices.has_value(), "segment_reduce(): indices based reduction is not supported yet.");
  axis = c10::maybe_wrap_dim(axis, data.dim());
  at::Tensor lengths = Lengths(lengths_arg, offsets);
  CheckArgs(data, lengths, axis, unsafe);
  const int64_t segments = lengths.size(-1);
  at::Tensor ids = Spread(SegmentIds(lengths, data.size(axis)), data);
  double start = 0;
  switch (reduce) {
    case Reduce::kProd: start = 1; break;
    case Reduce::kMax: start = -std::numeric_limits<double>::infinity(); break;
    case Reduce::kMin: start = std::numeric_limits<double>::infinity(); break;
    default: break;
  }
  if (initial.has_value()) start = initial->toDouble();
  at::Tensor acc = at::full(OutShape(data, axis, segments + 1), start, data.options());
  const char* op = reduce == Reduce::kProd ? "prod" : reduce == Reduce::kMax ? "amax" : reduce == Reduce::kMin ? "amin" : "sum";
  at::Tensor out = acc.scatter_reduce(axis, ids, data, op, /*include_self=*/true).narrow(axis, 0, segments);
  if (reduce != Reduce::kMean) return out;
  // mean = (initial + sum) / length; an empty segment is initial, or NaN.
  at::Tensor len = lengths.to(data.scalar_type());
  while (len.dim() < data.dim()) len = len.unsqueeze(-1);
  at::Tensor mean = out / len;
  if (initial.has_value()) mean = at::where(len == 0, at::full({}, start, data.options()), mean);
  return mean;
}

at::Tensor SegmentReduceBackward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& data,
                                 c10::string_view reduce_name, const std::optional<at::Tensor>& lengths_arg,
                                 const std::optional<at::Tensor>& offsets, int64_t axis,
                                 const std::optional<at::Scalar>& initial) {
  const Reduce reduce = ParseReduce(reduce_name);
  axis = c10::maybe_wrap_dim(axis, data.dim());
  at::Tensor lengths = Lengths(lengths_arg, offsets);
  const int64_t segments = lengths.size(-1);
  at::Tensor ids = Spread(SegmentIds(lengths, data.size(axis)), data);
  // Per-segment values gathered to the positions (the spare row: zero grad).
  auto at_positions = [&](const at::Tensor& per_segment) {
    std::vector<int64_t> pad(2 * (data.dim() - axis), 0);
    pad[pad.size() - 1] = 1;  // one more row after the last segment
    at::Tensor padded = at::constant_pad_nd(per_segment, pad, 0);
    return padded.gather(axis, ids);
  };
  switch (reduce) {
    case Reduce::kSum:
      return at_positions(grad);
    case Reduce::kMean: {
      at::Tensor len = lengths.to(grad.scalar_type());
      while (len.dim() < grad.dim()) len = len.unsqueeze(-1);
      return at_positions(grad / len.clamp_min(1));
    }
    case Reduce::kMax:
    case Reduce::kMin: {
      // Ties share the gradient equally, as the CPU's backward.
      at::Tensor hit = (data == at_positions(output)).to(grad.scalar_type());
      at::Tensor counts = at::zeros(OutShape(data, axis, segments + 1), grad.options()).scatter_add(axis, ids, hit);
      at::Tensor share = grad / counts.narrow(axis, 0, segments).clamp_min(1);
      return hit * at_positions(share);
    }
    case Reduce::kProd: {
      // d out / d x = out / x where x != 0; a zero gets the product of the
      // others (times initial) when it is its segment's only zero, else 0.
      at::Tensor zero = data == 0;
      at::Tensor safe = at::where(zero, at::ones_like(data), data);
      const double start = initial.has_value() ? initial->toDouble() : 1.0;
      at::Tensor shape_acc = at::full(OutShape(data, axis, segments + 1), start, data.options());
      at::Tensor nonzero_prod = shape_acc.scatter_reduce(axis, ids, safe, "prod", true).narrow(axis, 0, segments);
      at::Tensor zeros = at::zeros(OutShape(data, axis, segments + 1), grad.options())
                             .scatter_add(axis, ids, zero.to(grad.scalar_type()))
                             .narrow(axis, 0, segments);
      at::Tensor when_nonzero = at_positions(grad * output) / safe;
      at::Tensor when_zero = at::where(at_positions(zeros) == 1, at_positions(grad * nonzero_prod),
                                       at::zeros_like(data));
      return at::where(zero, when_zero, when_nonzero);
    }
  }
  TORCH_CHECK(false, "unreachable");
}

}  // namespace

void RegisterSegmentReduce() {
  Impl("segment_reduce", SegmentReduce);
  Impl("_segment_reduce_backward", SegmentReduceBackward);
}

}  // namespace torchtpu::aten
