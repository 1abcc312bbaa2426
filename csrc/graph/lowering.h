// Lowerings: one function per op name, turning a node's operand values into
// its result values. Op families register theirs at static-initialisation time
// (REGISTER_LOWERING), so the graph layer never names an op.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/node.h"
#include "hlo/builder.h"

namespace torchtpu::graph {

using LowerFn = std::function<std::vector<hlo::Value>(hlo::Builder&, const Node&,
                                                      const std::vector<hlo::Value>&)>;

void RegisterLowering(const std::string& op, LowerFn fn);
const LowerFn* FindLowering(const std::string& op);

// Raised when a node cannot be lowered or compiled; the message names the op
// with its input shapes and dtypes.
class LoweringError : public std::runtime_error {
 public:
  LoweringError(const std::string& message, bool out_of_memory = false)
      : std::runtime_error(message), out_of_memory_(out_of_memory) {}
  bool out_of_memory() const { return out_of_memory_; }
 private:
  bool out_of_memory_;
};

// The whole program of a node: arguments (donated where written), operand
// views, the op's lowering, then the writes. Results: first one updated
// buffer per write (so each donated argument knows its result index before
// the op is lowered), then the op's unwritten outputs in order.
// Every result buffer is rank 1 (storages are flat); `result_types` keeps
// the logical shape of each.
struct Program {
  std::string text;
  std::vector<hlo::TensorType> result_types;
};
Program LowerNode(const Node& node);

// The same inside an existing builder, so nodes compose into one module (the
// fused graph): `args` are the node's argument values (rank-1 buffers or
// rank-0 scalars). Returns the results in program order, each flattened to
// rank 1, and appends their logical types to `logical`. Arguments written by
// the node are read before they are replaced, so the caller may donate them.
std::vector<hlo::Value> LowerNodeInto(hlo::Builder& b, const Node& node,
                                      const std::vector<hlo::Value>& args,
                                      std::vector<hlo::TensorType>* logical);

}  // namespace torchtpu::graph

#define TORCHTPU_CONCAT_INNER(a, b) a##b
#define TORCHTPU_CONCAT(a, b) TORCHTPU_CONCAT_INNER(a, b)
#define REGISTER_LOWERING(name, ...)                                          \
  static const bool TORCHTPU_CONCAT(torchtpu_lowering_, __COUNTER__) =        \
      (::torchtpu::graph::RegisterLowering(name, __VA_ARGS__), true)
