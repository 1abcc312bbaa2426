// Lowering of user ops whose StableHLO comes from Python
// (torchtpu.experimental.stablehlo_lowering): the user's function joins the
// module beside @main and the node becomes one func.call of it, so the op
// fuses with its neighbours like any other node.
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

// node op: "custom:<the user's op name>".
// attrs: 0 the function's text (one `func.func private @<symbol>`), checked
// against the operands and results by the Python side; 1 the symbol; 2 the
// result types, "tensor<...>" joined by '|'.
REGISTER_LOWERING("custom", [](Builder& b, const graph::Node& n, const Values& in) {
  const std::string& text = n.StrAttr(0);
  const std::string& symbol = n.StrAttr(1);
  const std::string& spelled = n.StrAttr(2);
  std::vector<hlo::TensorType> results;
  for (size_t start = 0; start <= spelled.size();) {
    size_t bar = spelled.find('|', start);
    if (bar == std::string::npos) bar = spelled.size();
    std::optional<hlo::TensorType> t = hlo::ParseTensorType(spelled.substr(start, bar - start));
    if (!t) throw hlo::BuildError(n.op + ": bad result type '" + spelled.substr(start, bar - start) + "'");
    results.push_back(*t);
    start = bar + 1;
  }
  b.AddFunction(symbol, text);
  return b.Op("func.call", in, results, "{callee = @" + symbol + "}");
});

}  // namespace
}  // namespace torchtpu::lower
