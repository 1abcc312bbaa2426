#include "graph/signature.h"

#include <cstring>

namespace torchtpu::graph {
namespace {

class Encoder {
 public:
  explicit Encoder(std::string& out) : out_(out) {}
  void I(int64_t v) { Raw(&v, sizeof v); }
  void D(double v) { Raw(&v, sizeof v); }
  void S(const std::string& s) { I(static_cast<int64_t>(s.size())); out_.append(s); }
  void Ints(const std::vector<int64_t>& v) {
    I(static_cast<int64_t>(v.size()));
    Raw(v.data(), v.size() * sizeof(int64_t));
  }
  void Type(const hlo::TensorType& t) { I(static_cast<int64_t>(t.dtype)); Ints(t.shape); }
  void ViewOf(const View& v) { Ints(v.sizes); Ints(v.strides); I(v.offset); }

 private:
  void Raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& out_;
};

}  // namespace

std::string Signature(const Node& node) {
  std::string key;
  key.reserve(128);
  Encoder e(key);
  e.S(node.op);
  e.I(static_cast<int64_t>(node.attrs.size()));
  for (const Attr& a : node.attrs) {
    e.I(static_cast<int64_t>(a.index()));
    std::visit([&](const auto& v) {
      using T = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<T, int64_t>) e.I(v);
      else if constexpr (std::is_same_v<T, double>) e.D(v);
      else if constexpr (std::is_same_v<T, bool>) e.I(v ? 1 : 0);
      else if constexpr (std::is_same_v<T, std::string>) e.S(v);
      else e.Ints(v);
    }, a);
  }
  e.I(static_cast<int64_t>(node.args.size()));
  for (const ArgType& t : node.args) e.Type(t);
  e.I(static_cast<int64_t>(node.inputs.size()));
  for (const Input& in : node.inputs) {
    e.I(in.arg);
    e.I(in.view ? 1 : 0);
    if (in.view && in.offset_arg >= 0) {
      // A runtime start: its value is not part of the program. Encoded in
      // the offset's place as -(arg + 1), which no static offset (>= 0) is,
      // so signatures without runtime starts are unchanged.
      View dynamic = *in.view;
      dynamic.offset = -(static_cast<int64_t>(in.offset_arg) + 1);
      e.ViewOf(dynamic);
    } else if (in.view) {
      e.ViewOf(*in.view);
    }
  }
  e.I(static_cast<int64_t>(node.writes.size()));
  for (const Write& w : node.writes) {
    e.I(w.output);
    e.I(w.arg);
    if (w.offset_arg >= 0) {
      View dynamic = w.view;  // as for inputs: the start is not in the program
      dynamic.offset = -(static_cast<int64_t>(w.offset_arg) + 1);
      e.ViewOf(dynamic);
    } else {
      e.ViewOf(w.view);
    }
    e.Type(w.base);
  }
  return key;
}

}  // namespace torchtpu::graph
