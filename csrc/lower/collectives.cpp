// Collectives over replica groups (lower/collectives.h). StableHLO's
// all_reduce, all_gather, reduce_scatter, all_to_all and collective_permute
// without a channel handle run in cross-replica mode: the groups name
// replica ids of a program compiled with num_replicas = N.
#include "lower/collectives.h"

#include <algorithm>
#include <functional>
#include <string>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

using hlo::BuildError;
using hlo::TensorType;

void Require(bool ok, const std::string& message) {
  if (!ok) throw BuildError("collective: " + message);
}

size_t GroupSize(const ReplicaGroups& groups) {
  Require(!groups.empty() && !groups[0].empty(), "needs at least one non-empty replica group");
  for (const auto& g : groups) Require(g.size() == groups[0].size(), "replica groups must have equal sizes");
  return groups[0].size();
}

// dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>
std::string DenseGroups(const ReplicaGroups& groups) {
  std::string text = "dense<[";
  for (size_t i = 0; i < groups.size(); ++i) {
    text += i ? ", [" : "[";
    for (size_t j = 0; j < groups[i].size(); ++j) text += (j ? ", " : "") + std::to_string(groups[i][j]);
    text += "]";
  }
  return text + "]> : tensor<" + std::to_string(groups.size()) + "x" + std::to_string(GroupSize(groups)) +
         "xi64>";
}

std::string I64Attr(const char* name, int64_t v) { return std::string(name) + " = " + std::to_string(v) + " : i64"; }

// The combiner of two scalars of `dtype` for a reduce op. XLA's collectives
// accept add, multiply, minimum and maximum, and `and`/`or` on pred only
// ("Unsupported reduction computation" otherwise): integer bitwise ops go
// through BitPlanes below.
hlo::RegionFn Combiner(CollectiveReduce op, DType dtype) {
  const bool is_bool = dtype == DType::kBool;
  const char* name = nullptr;
  switch (op) {
    case CollectiveReduce::kSum:
    case CollectiveReduce::kAvg: name = is_bool ? "or" : "add"; break;
    case CollectiveReduce::kProduct: name = is_bool ? "and" : "multiply"; break;
    case CollectiveReduce::kMin: name = is_bool ? "and" : "minimum"; break;
    case CollectiveReduce::kMax: name = is_bool ? "or" : "maximum"; break;
    default: break;
  }
  Require(name != nullptr, "no combiner for reduce op " + std::to_string(static_cast<int64_t>(op)));
  std::string op_name = name;
  return [op_name](Builder& rb, const Values& a) { return Values{rb.Binary(op_name, a[0], a[1])}; };
}

bool IsBitwise(CollectiveReduce op) {
  return op == CollectiveReduce::kBand || op == CollectiveReduce::kBor || op == CollectiveReduce::kBxor;
}

void CheckReduce(CollectiveReduce op, DType dtype) {
  const bool is_float = hlo::IsFloat(dtype) || hlo::IsComplex(dtype);
  Require(static_cast<int64_t>(op) >= 0 && static_cast<int64_t>(op) <= static_cast<int64_t>(CollectiveReduce::kBxor),
          "unknown reduce op " + std::to_string(static_cast<int64_t>(op)));
  Require(!IsBitwise(op) || !is_float,
          std::string("bitwise reductions take integers or bool, not ") + hlo::DTypeName(dtype));
  Require(op != CollectiveReduce::kAvg || is_float,
          std::string("AVG takes floating or complex tensors, not ") + hlo::DTypeName(dtype));
  Require(!hlo::IsComplex(dtype) || op == CollectiveReduce::kSum || op == CollectiveReduce::kAvg ||
              op == CollectiveReduce::kProduct,
          "complex tensors have no MIN or MAX");
}

// The unsigned type of `dtype`'s size, for carrying its bits (1, 2, 4 or 8 bytes).
DType BitsOf(DType dtype) {
  switch (hlo::DTypeSize(dtype)) {
    case 1: return DType::kU8;
    case 2: return DType::kU16;
    case 4: return DType::kU32;
    case 8: return DType::kU64;
    default: break;
  }
  throw BuildError(std::string("collective: no bit pattern type for ") + hlo::DTypeName(dtype));
}

// A reducing collective (all_reduce, reduce_scatter) of `x` with `combine`.
using ReducingOp = std::function<Value(Value x, const hlo::RegionFn& combine)>;

// BAND, BOR and BXOR, which XLA cannot reduce directly: x's bits as i32
// planes along a new last dim (bool: one plane), reduced with minimum (and),
// maximum (or) or add (xor: the parity), then packed back. The planes are
// 32x the data of a 1-byte type and 4x of an int64: these ops carry flags.
Value BitPlanes(Builder& b, Value x, CollectiveReduce op, const ReducingOp& reduce) {
  const CollectiveReduce plane_op = op == CollectiveReduce::kBand  ? CollectiveReduce::kMin
                                    : op == CollectiveReduce::kBor ? CollectiveReduce::kMax
                                                                   : CollectiveReduce::kSum;
  auto finish = [&](Value reduced) {
    return op == CollectiveReduce::kBxor ? b.Binary("and", reduced, SplatInt(b, 1, reduced)) : reduced;
  };
  if (x.dtype() == DType::kBool) {
    Value plane = b.Convert(x, DType::kI32);
    Value reduced = finish(reduce(plane, Combiner(plane_op, DType::kI32)));
    return b.Cmp(reduced, SplatInt(b, 0, reduced), hlo::Compare::kNE);
  }
  const DType bits = BitsOf(x.dtype());
  const int64_t width = static_cast<int64_t>(8 * hlo::DTypeSize(x.dtype()));
  Value u = b.BitcastConvert(x, bits);
  hlo::Shape planes_shape = x.shape();
  planes_shape.push_back(width);
  std::vector<int64_t> keep(static_cast<size_t>(x.rank()));
  for (int64_t d = 0; d < x.rank(); ++d) keep[static_cast<size_t>(d)] = d;
  Value wide = b.BroadcastInDim(u, planes_shape, keep);
  Value shift = b.Iota(hlo::TensorType{bits, planes_shape}, x.rank());
  Value planes = b.Convert(b.Binary("and", b.Binary("shift_right_logical", wide, shift), SplatInt(b, 1, wide)),
                           DType::kI32);
  Value reduced = finish(reduce(planes, Combiner(plane_op, DType::kI32)));
  Value reduced_shift = b.Iota(hlo::TensorType{bits, reduced.shape()}, x.rank());
  Value placed = b.Binary("shift_left", b.Convert(reduced, bits), reduced_shift);
  Value packed = ReduceWith(b, placed, {x.rank()}, "add", hlo::Literal::Int(0));
  return b.BitcastConvert(packed, x.dtype());
}

Value DivideByGroupSize(Builder& b, Value sum, CollectiveReduce op, size_t group_size) {
  if (op != CollectiveReduce::kAvg) return sum;
  return b.Div(sum, Splat(b, static_cast<double>(group_size), sum));
}

// Rank-0 values travel as [1] through the ops that concatenate or split.
Value AtLeast1D(Builder& b, Value x) { return x.rank() == 0 ? b.Reshape(x, {1}) : x; }

}  // namespace

std::vector<int64_t> EncodeGroups(const ReplicaGroups& groups) {
  std::vector<int64_t> out{static_cast<int64_t>(GroupSize(groups))};
  for (const auto& g : groups) out.insert(out.end(), g.begin(), g.end());
  return out;
}

ReplicaGroups DecodeGroups(const std::vector<int64_t>& encoded) {
  Require(!encoded.empty() && encoded[0] > 0 && (encoded.size() - 1) % encoded[0] == 0 && encoded.size() > 1,
          "malformed replica groups attribute");
  ReplicaGroups groups;
  for (size_t i = 1; i < encoded.size(); i += encoded[0]) {
    groups.emplace_back(encoded.begin() + i, encoded.begin() + i + encoded[0]);
  }
  return groups;
}

Value AllReduce(Builder& b, Value x, CollectiveReduce op, const ReplicaGroups& groups) {
  const size_t n = GroupSize(groups);
  CheckReduce(op, x.dtype());
  ReducingOp all_reduce = [&](Value v, const hlo::RegionFn& combine) {
    const TensorType scalar{v.dtype(), {}};
    return b.OpWithRegion("stablehlo.all_reduce", {v}, {v.type}, {scalar, scalar}, combine,
                          "{replica_groups = " + DenseGroups(groups) + "}")[0];
  };
  if (IsBitwise(op)) return BitPlanes(b, x, op, all_reduce);
  return DivideByGroupSize(b, all_reduce(x, Combiner(op, x.dtype())), op, n);
}

Value AllGather(Builder& b, Value x, int64_t dim, const ReplicaGroups& groups) {
  const int64_t n = static_cast<int64_t>(GroupSize(groups));
  x = AtLeast1D(b, x);
  dim = Dim(dim, x.rank());
  hlo::Shape out = x.shape();
  out[dim] *= n;
  return b.Op("stablehlo.all_gather", {x}, {TensorType{x.dtype(), out}},
              "{" + I64Attr("all_gather_dim", dim) + ", replica_groups = " + DenseGroups(groups) + "}")[0];
}

Value ReduceScatter(Builder& b, Value x, int64_t dim, CollectiveReduce op, const ReplicaGroups& groups) {
  const int64_t n = static_cast<int64_t>(GroupSize(groups));
  Require(x.rank() > 0, "reduce_scatter needs a tensor of rank >= 1");
  dim = Dim(dim, x.rank());
  Require(x.shape()[dim] % n == 0, "reduce_scatter: dimension " + std::to_string(dim) + " of size " +
                                       std::to_string(x.shape()[dim]) + " does not divide by the group size " +
                                       std::to_string(n));
  CheckReduce(op, x.dtype());
  ReducingOp reduce_scatter = [&](Value v, const hlo::RegionFn& combine) {
    hlo::Shape out = v.shape();
    out[dim] /= n;
    const TensorType scalar{v.dtype(), {}};
    return b.OpWithRegion("stablehlo.reduce_scatter", {v}, {TensorType{v.dtype(), out}}, {scalar, scalar}, combine,
                          "{" + I64Attr("scatter_dimension", dim) + ", replica_groups = " + DenseGroups(groups) +
                              "}")[0];
  };
  if (IsBitwise(op)) return BitPlanes(b, x, op, reduce_scatter);
  return DivideByGroupSize(b, reduce_scatter(x, Combiner(op, x.dtype())), op, static_cast<size_t>(n));
}

Value AllToAll(Builder& b, Value x, int64_t split_dim, int64_t concat_dim, const ReplicaGroups& groups) {
  const int64_t n = static_cast<int64_t>(GroupSize(groups));
  Require(x.rank() > 0, "all_to_all needs a tensor of rank >= 1");
  split_dim = Dim(split_dim, x.rank());
  concat_dim = Dim(concat_dim, x.rank());
  Require(x.shape()[split_dim] % n == 0, "all_to_all: dimension " + std::to_string(split_dim) + " of size " +
                                             std::to_string(x.shape()[split_dim]) +
                                             " does not divide by the group size " + std::to_string(n));
  hlo::Shape out = x.shape();
  out[split_dim] /= n;
  out[concat_dim] *= n;
  return b.Op("stablehlo.all_to_all", {x}, {TensorType{x.dtype(), out}},
              "{" + I64Attr("split_dimension", split_dim) + ", " + I64Attr("concat_dimension", concat_dim) + ", " +
                  I64Attr("split_count", n) + ", replica_groups = " + DenseGroups(groups) + "}")[0];
}

Value CollectivePermute(Builder& b, Value x, const std::vector<std::pair<int64_t, int64_t>>& source_target) {
  Require(!source_target.empty(), "collective_permute needs at least one (source, target) pair");
  std::string pairs = "dense<[";
  for (size_t i = 0; i < source_target.size(); ++i) {
    pairs += (i ? ", [" : "[") + std::to_string(source_target[i].first) + ", " +
             std::to_string(source_target[i].second) + "]";
  }
  pairs += "]> : tensor<" + std::to_string(source_target.size()) + "x2xi64>";
  return b.Op("stablehlo.collective_permute", {x}, {x.type}, "{source_target_pairs = " + pairs + "}")[0];
}

Value Broadcast(Builder& b, Value x, int64_t root, const ReplicaGroups& groups) {
  const int64_t n = static_cast<int64_t>(GroupSize(groups));
  Require(root >= 0 && root < n, "broadcast: root " + std::to_string(root) + " is not a position in a group of " +
                                     std::to_string(n));
  if (hlo::IsComplex(x.dtype())) {
    Value gathered = AllGather(b, x, 0, groups);
    Value row = b.SliceDim(gathered, 0, root * (x.rank() ? x.shape()[0] : 1),
                           (root + 1) * (x.rank() ? x.shape()[0] : 1));
    return x.rank() ? row : b.Reshape(row, {});
  }
  // is_root[replica id]: true for each group's member at `root`.
  int64_t replicas = 0;
  for (const auto& g : groups) {
    for (int64_t id : g) replicas = std::max(replicas, id + 1);
  }
  std::vector<int64_t> is_root(static_cast<size_t>(replicas), 0);
  for (const auto& g : groups) is_root[static_cast<size_t>(g[static_cast<size_t>(root)])] = 1;
  Value table = b.ConstantI64(is_root, {replicas});
  Value id = b.Convert(b.Op("stablehlo.replica_id", {}, {TensorType{DType::kU32, {}}})[0], DType::kI64);
  Value mine = b.Reshape(b.DynamicSlice(table, {id}, {1}), {});
  Value pred = b.BroadcastTo(b.Cmp(mine, I64(b, 0), hlo::Compare::kNE), x.shape());
  if (x.dtype() == DType::kBool) {
    return AllReduce(b, And(b, pred, x), CollectiveReduce::kMax, groups);
  }
  const DType bits = BitsOf(x.dtype());
  // Unsigned addition of the root's bits and zeros is exact.
  Value raw = b.BitcastConvert(x, bits);
  Value contribution = b.Select(pred, raw, b.Constant(hlo::Literal::Int(0), bits, x.shape()));
  return b.BitcastConvert(AllReduce(b, contribution, CollectiveReduce::kSum, groups), x.dtype());
}

namespace {

CollectiveReduce ReduceAttr(const graph::Node& n, size_t i) { return static_cast<CollectiveReduce>(n.IntAttr(i)); }

// attrs: 0 reduce op (CollectiveReduce), 1 groups (EncodeGroups).
REGISTER_LOWERING("c10d_all_reduce", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{AllReduce(b, in[0], ReduceAttr(n, 0), DecodeGroups(n.IntsAttr(1)))};
});
// attrs: 0 dim, 1 groups.
REGISTER_LOWERING("c10d_all_gather", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{AllGather(b, in[0], n.IntAttr(0), DecodeGroups(n.IntsAttr(1)))};
});
// attrs: 0 dim, 1 reduce op, 2 groups.
REGISTER_LOWERING("c10d_reduce_scatter", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{ReduceScatter(b, in[0], n.IntAttr(0), ReduceAttr(n, 1), DecodeGroups(n.IntsAttr(2)))};
});
// attrs: 0 split dim, 1 concat dim, 2 groups.
REGISTER_LOWERING("c10d_all_to_all", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{AllToAll(b, in[0], n.IntAttr(0), n.IntAttr(1), DecodeGroups(n.IntsAttr(2)))};
});
// attrs: 0 (source, target) pairs, flattened.
REGISTER_LOWERING("c10d_permute", [](Builder& b, const graph::Node& n, const Values& in) {
  const std::vector<int64_t>& flat = n.IntsAttr(0);
  Require(flat.size() % 2 == 0, "malformed (source, target) pairs attribute");
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (size_t i = 0; i < flat.size(); i += 2) pairs.emplace_back(flat[i], flat[i + 1]);
  return Values{CollectivePermute(b, in[0], pairs)};
});
// attrs: 0 root (position in the group), 1 groups.
REGISTER_LOWERING("c10d_broadcast", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{Broadcast(b, in[0], n.IntAttr(0), DecodeGroups(n.IntsAttr(1)))};
});

}  // namespace
}  // namespace torchtpu::lower
