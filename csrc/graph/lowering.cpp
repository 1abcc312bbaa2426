#include "graph/lowering.h"

#include <mutex>
#include <unordered_map>

#include "graph/view_lowering.h"

namespace torchtpu::graph {
namespace {
std::unordered_map<std::string, LowerFn>& Registry() {
  static std::unordered_map<std::string, LowerFn> registry;
  return registry;
}
}  // namespace

void RegisterLowering(const std::string& op, LowerFn fn) { Registry()[op] = std::move(fn); }

const LowerFn* FindLowering(const std::string& op) {
  auto it = Registry().find(op);
  // "custom:NAME" (a user's op with a StableHLO lowering from Python) is
  // lowered by "custom"; the node keeps the user's name for errors.
  if (it == Registry().end() && op.rfind("custom:", 0) == 0) it = Registry().find("custom");
  return it == Registry().end() ? nullptr : &it->second;
}

std::vector<hlo::Value> LowerNodeInto(hlo::Builder& b, const Node& node,
                                      const std::vector<hlo::Value>& args,
                                      std::vector<hlo::TensorType>* logical) {
  const LowerFn* fn = FindLowering(node.op);
  if (!fn) throw LoweringError("torchtpu: no lowering registered for " + node.Describe());
  try {
    std::vector<hlo::Value> operands;
    for (const Input& in : node.inputs) {
      hlo::Value a = args.at(in.arg);
      if (in.view && in.offset_arg >= 0) {
        operands.push_back(ReadContiguousViewAt(b, a, *in.view, args.at(in.offset_arg)));
      } else {
        operands.push_back(in.view ? ReadView(b, a, *in.view) : a);
      }
    }
    std::vector<hlo::Value> outputs = (*fn)(b, node, operands);
    std::vector<bool> written(outputs.size(), false);
    std::vector<hlo::Value> results;
    for (const Write& w : node.writes) {
      hlo::Value value = outputs.at(w.output);
      written[w.output] = true;
      if (value.shape() != w.view.sizes) value = b.BroadcastTo(value, w.view.sizes);
      if (w.arg >= 0 && w.offset_arg >= 0) {
        results.push_back(WriteContiguousViewAt(b, args.at(w.arg), w.view, value, args.at(w.offset_arg)));
      } else if (w.arg >= 0) {
        results.push_back(WriteView(b, args.at(w.arg), w.view, value));
      } else {
        results.push_back(b.Reshape(b.Convert(value, w.base.dtype), w.base.shape));
      }
      logical->push_back(results.back().type);
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (written[i]) continue;
      logical->push_back(outputs[i].type);
      results.push_back(b.Reshape(outputs[i], {outputs[i].type.numel()}));
    }
    return results;
  } catch (const LoweringError&) {
    throw;
  } catch (const std::exception& e) {
    throw LoweringError("torchtpu: cannot lower " + node.Describe() + ": " + e.what());
  }
}

Program LowerNode(const Node& node) {
  hlo::Builder b;
  std::vector<std::optional<int>> alias(node.args.size());
  for (size_t w = 0; w < node.writes.size(); ++w) {
    if (node.writes[w].arg >= 0) alias.at(node.writes[w].arg) = static_cast<int>(w);
  }
  std::vector<hlo::Value> args;
  for (size_t i = 0; i < node.args.size(); ++i) args.push_back(b.Arg(node.args[i], alias[i]));
  Program program;
  std::vector<hlo::Value> results = LowerNodeInto(b, node, args, &program.result_types);
  try {
    b.Return(results);
    program.text = b.Finish();
  } catch (const std::exception& e) {
    throw LoweringError("torchtpu: cannot lower " + node.Describe() + ": " + e.what());
  }
  return program;
}

}  // namespace torchtpu::graph
