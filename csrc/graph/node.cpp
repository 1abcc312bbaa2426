#include "graph/node.h"

#include <stdexcept>

namespace torchtpu::graph {

bool View::IsContiguous() const {
  int64_t expected = 1;
  for (int64_t i = static_cast<int64_t>(sizes.size()) - 1; i >= 0; --i) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) return false;
    expected *= sizes[i];
  }
  return true;
}

namespace {
template <typename T>
const T& Get(const std::vector<Attr>& attrs, size_t i, const std::string& op) {
  if (i >= attrs.size() || !std::holds_alternative<T>(attrs[i])) {
    throw std::logic_error("torchtpu: lowering of " + op + " reads attribute " +
                           std::to_string(i) + " of the wrong kind");
  }
  return std::get<T>(attrs[i]);
}

std::string TypeText(const hlo::TensorType& t) {
  std::string s = hlo::DTypeName(t.dtype);
  s += '[';
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(t.shape[i]);
  }
  return s + ']';
}
}  // namespace

int64_t Node::IntAttr(size_t i) const { return Get<int64_t>(attrs, i, op); }
double Node::FloatAttr(size_t i) const { return Get<double>(attrs, i, op); }
bool Node::BoolAttr(size_t i) const { return Get<bool>(attrs, i, op); }
const std::string& Node::StrAttr(size_t i) const { return Get<std::string>(attrs, i, op); }
const std::vector<int64_t>& Node::IntsAttr(size_t i) const {
  return Get<std::vector<int64_t>>(attrs, i, op);
}

hlo::TensorType Node::InputType(size_t i) const {
  const Input& in = inputs.at(i);
  hlo::TensorType t = args.at(in.arg);
  if (in.view) t.shape = in.view->sizes;
  return t;
}

std::string Node::Describe() const {
  std::string s = op + "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) s += ", ";
    s += TypeText(InputType(i));
  }
  return s + ")";
}

}  // namespace torchtpu::graph
