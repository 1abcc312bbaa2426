// Collectives as StableHLO ops over replica groups: the device side of the
// native c10d transport (docs/distributed.md), where a collective is a
// program compiled for N replicas that the plugin runs on N devices at once.
// Torch-free. Each function takes and returns one replica's value; `groups`
// lists replica ids, every group the same size, every replica in exactly one
// group (as StableHLO requires). Also registered as lowerings, named
// "c10d_<collective>", so a graph node can carry one.
#pragma once

#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torchtpu::lower {

// c10d's ReduceOp, in its own order (torch.distributed.ReduceOp's values).
enum class CollectiveReduce : int64_t {
  kSum = 0,
  kAvg = 1,
  kProduct = 2,
  kMin = 3,
  kMax = 4,
  kBand = 5,
  kBor = 6,
  kBxor = 7,
};

using ReplicaGroups = std::vector<std::vector<int64_t>>;

// Node attributes hold the groups as one int list: group size, then the ids.
std::vector<int64_t> EncodeGroups(const ReplicaGroups& groups);
ReplicaGroups DecodeGroups(const std::vector<int64_t>& encoded);

// Every replica gets the reduction over its group. kAvg divides the sum by
// the group size (floating and complex dtypes only, as NCCL); the bitwise
// ops take integers and bool (XLA reduces no integer `and`/`or`/`xor`: they
// travel as bit planes, 4x to 32x the data); bool sums and maxima are `or`,
// products and minima `and`, as gloo computes them on bool tensors.
hlo::Value AllReduce(hlo::Builder& b, hlo::Value x, CollectiveReduce op, const ReplicaGroups& groups);
// The group's values concatenated along `dim`, in group order.
hlo::Value AllGather(hlo::Builder& b, hlo::Value x, int64_t dim, const ReplicaGroups& groups);
// The reduction over the group, split along `dim` into group-size blocks;
// the i-th member keeps block i. `dim`'s size must divide by the group size.
hlo::Value ReduceScatter(hlo::Builder& b, hlo::Value x, int64_t dim, CollectiveReduce op,
                         const ReplicaGroups& groups);
// x split along `split_dim` into group-size blocks, block j sent to member j;
// the received blocks concatenated along `concat_dim` in member order.
hlo::Value AllToAll(hlo::Builder& b, hlo::Value x, int64_t split_dim, int64_t concat_dim,
                    const ReplicaGroups& groups);
// (source, target) replica pairs: each target receives its source's value;
// a replica that is no target gets zeros (send/recv, ring exchanges).
hlo::Value CollectivePermute(hlo::Builder& b, hlo::Value x,
                             const std::vector<std::pair<int64_t, int64_t>>& source_target);
// Every member of a group gets the value of the group's member at position
// `root` (c10d's group_src), bit for bit (-0.0 and NaN payloads included):
// the root's bits summed as unsigned integers with zeros; complex values are
// all-gathered and the root's block kept.
hlo::Value Broadcast(hlo::Builder& b, hlo::Value x, int64_t root, const ReplicaGroups& groups);

}  // namespace torchtpu::lower
