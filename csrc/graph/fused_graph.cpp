#include "graph/fused_graph.h"

#include <optional>
#include <stdexcept>

#include "graph/signature.h"

namespace torchtpu::graph {
namespace {

void AppendInt(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }

void AppendType(std::string& out, const hlo::TensorType& t) {
  AppendInt(out, static_cast<int64_t>(t.dtype));
  AppendInt(out, t.rank());
  for (int64_t d : t.shape) AppendInt(out, d);
}

// Tags keep the encoding unambiguous: an input, a node, the outputs.
constexpr int64_t kInputTag = 0x1001, kNodeTag = 0x1002, kOutputsTag = 0x1003;

}  // namespace

int FusedGraph::AddInput(const hlo::TensorType& type) {
  inputs_.push_back(type);
  AppendInt(signature_, kInputTag);
  AppendType(signature_, type);
  return static_cast<int>(inputs_.size() - 1);
}

int FusedGraph::AddNode(Node node, std::vector<ValueRef> args, std::vector<hlo::TensorType> result_types) {
  std::string signature = Signature(node);
  return AddNode(std::move(node), std::move(args), std::move(result_types), signature);
}

int FusedGraph::AddNode(Node node, std::vector<ValueRef> args, std::vector<hlo::TensorType> result_types,
                        const std::string& signature) {
  if (args.size() != node.args.size()) {
    throw std::invalid_argument("FusedGraph::AddNode: " + std::to_string(args.size()) +
                                " argument values for " + node.Describe());
  }
  AppendInt(signature_, kNodeTag);
  signature_ += signature;
  for (const ValueRef& v : args) {
    AppendInt(signature_, v.node);
    AppendInt(signature_, v.index);
  }
  nodes_.push_back(Entry{std::move(node), std::move(args), std::move(result_types)});
  return static_cast<int>(nodes_.size() - 1);
}

hlo::TensorType FusedGraph::FlatType(const ValueRef& v) const {
  if (v.node < 0) return inputs_.at(v.index);
  const hlo::TensorType& t = nodes_.at(v.node).result_types.at(v.index);
  return hlo::TensorType{t.dtype, {t.numel()}};
}

std::string FusedGraph::Key(const std::vector<ValueRef>& outputs, const std::vector<int>& donate) const {
  std::string key;
  key.reserve(signature_.size() + 16 * (outputs.size() + donate.size()) + 16);
  key = signature_;
  AppendInt(key, kOutputsTag);
  AppendInt(key, static_cast<int64_t>(outputs.size()));
  for (const ValueRef& v : outputs) {
    AppendInt(key, v.node);
    AppendInt(key, v.index);
  }
  for (int d : donate) AppendInt(key, d);
  return key;
}

Program FusedGraph::Lower(const std::vector<ValueRef>& outputs, const std::vector<int>& donate) const {
  hlo::Builder b;
  std::vector<hlo::Value> inputs;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    std::optional<int> alias;
    if (i < donate.size() && donate[i] >= 0) alias = donate[i];
    inputs.push_back(b.Arg(inputs_[i], alias));
  }
  std::vector<std::vector<hlo::Value>> results(nodes_.size());
  auto value_of = [&](const ValueRef& v) -> const hlo::Value& {
    return v.node < 0 ? inputs.at(v.index) : results.at(v.node).at(v.index);
  };
  for (size_t n = 0; n < nodes_.size(); ++n) {
    const Entry& e = nodes_[n];
    std::vector<hlo::Value> args;
    args.reserve(e.args.size());
    for (const ValueRef& v : e.args) args.push_back(value_of(v));
    std::vector<hlo::TensorType> logical;
    results[n] = LowerNodeInto(b, e.node, args, &logical);
  }
  Program program;
  std::vector<hlo::Value> returned;
  for (const ValueRef& v : outputs) {
    returned.push_back(value_of(v));
    program.result_types.push_back(returned.back().type);
  }
  try {
    b.Return(returned);
    program.text = b.Finish();
  } catch (const std::exception& e) {
    throw LoweringError("torchtpu: cannot lower " + Describe() + ": " + e.what());
  }
  return program;
}

std::string FusedGraph::Describe(size_t max_ops) const {
  std::string s = "fused graph of " + std::to_string(nodes_.size()) + " ops: ";
  for (size_t i = 0; i < nodes_.size() && i < max_ops; ++i) {
    if (i) s += ", ";
    s += nodes_[i].node.Describe();
  }
  if (nodes_.size() > max_ops) s += ", ...";
  return s;
}

void FusedGraph::Clear() {
  inputs_.clear();
  nodes_.clear();
  signature_.clear();
}

}  // namespace torchtpu::graph
