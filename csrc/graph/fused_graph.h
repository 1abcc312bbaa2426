// The fused graph: nodes recorded one after another, whose arguments are
// either the graph's inputs (buffers that already exist on the device) or
// results of earlier nodes, lowered together into one module when the graph
// is cut. Its key — the exact bytes that decide its program — is built
// incrementally while nodes are recorded, so a cache hit renders no text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/lowering.h"
#include "graph/node.h"

namespace torchtpu::graph {

// A value of the graph: input `index` (node == -1) or result `index` of node
// `node`, in LowerNode's result order (one flat buffer per write, then the
// unwritten outputs).
struct ValueRef {
  int node = -1;
  int index = 0;
  bool operator==(const ValueRef& o) const { return node == o.node && index == o.index; }
  bool operator<(const ValueRef& o) const { return node != o.node ? node < o.node : index < o.index; }
};

class FusedGraph {
 public:
  // A rank-1 buffer or rank-0 scalar argument of the program.
  int AddInput(const hlo::TensorType& type);
  // Records `node`; argument i of the node is `args[i]`. `result_types` are
  // the node's logical result types (LowerNode's). Returns the node's index.
  int AddNode(Node node, std::vector<ValueRef> args, std::vector<hlo::TensorType> result_types);
  // The same with the node's Signature already computed (saves building it twice).
  int AddNode(Node node, std::vector<ValueRef> args, std::vector<hlo::TensorType> result_types,
              const std::string& signature);

  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  bool empty() const { return nodes_.empty(); }
  const hlo::TensorType& input_type(int i) const { return inputs_.at(i); }
  const Node& node(int i) const { return nodes_.at(i).node; }
  // The values node i reads, one per argument of node(i).
  const std::vector<ValueRef>& node_args(int i) const { return nodes_.at(i).args; }
  // The type of a value as the program holds it: rank 0 for scalar inputs,
  // otherwise rank 1 (buffers are flat).
  hlo::TensorType FlatType(const ValueRef& v) const;

  // The program key for this graph returning `outputs`, with input i donated
  // to output donate[i] (-1: not donated). Two graphs share a program exactly
  // when their keys match.
  std::string Key(const std::vector<ValueRef>& outputs, const std::vector<int>& donate) const;
  // The module: inputs as arguments (donated ones aliased to their output),
  // every node lowered in order, `outputs` returned flat.
  Program Lower(const std::vector<ValueRef>& outputs, const std::vector<int>& donate) const;
  // "fused graph of 12 ops: add(f32[4], f32[4]), mul(...), ..." for errors.
  std::string Describe(size_t max_ops = 8) const;

  void Clear();

 private:
  struct Entry {
    Node node;
    std::vector<ValueRef> args;
    std::vector<hlo::TensorType> result_types;
  };
  std::vector<hlo::TensorType> inputs_;
  std::vector<Entry> nodes_;
  std::string signature_;  // inputs and nodes so far, appended as they come
};

}  // namespace torchtpu::graph
