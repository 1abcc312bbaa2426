// Lowerings of the linalg family: matrix products (mm, bmm, mv, dot and their add* forms) as dot_general in the accumulation type.
#include <algorithm>
#include <string>

#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

// dot_general with XLA's operand precision (attr 3 of a matmul node, absent
// in older nodes: 0 DEFAULT, 1 HIGH, 2 HIGHEST). Accelerators honour it (on
// TPU, DEFAULT multiplies f32 in one bf16 pass); the CPU plugin computes f32
// products in f32 whatever it says.
Value Dot(Builder& b, Value a, Value c, const std::vector<int64_t>& batch, int64_t a_contract, int64_t c_contract,
          int64_t precision) {
  if (precision == 0) return b.DotGeneral(a, c, batch, batch, {a_contract}, {c_contract});
  hlo::Shape out;
  for (int64_t d : batch) out.push_back(a.shape()[d]);
  for (int64_t d = 0; d < a.rank(); ++d)
    if (d != a_contract && std::find(batch.begin(), batch.end(), d) == batch.end()) out.push_back(a.shape()[d]);
  for (int64_t d = 0; d < c.rank(); ++d)
    if (d != c_contract && std::find(batch.begin(), batch.end(), d) == batch.end()) out.push_back(c.shape()[d]);
  if (a.shape()[a_contract] != c.shape()[c_contract]) {
    throw hlo::BuildError("hlo: dot contracting mismatch: " + a.type.str() + " and " + c.type.str());
  }
  auto list = [](const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
    return s + "]";
  };
  const char* p = precision == 2 ? "HIGHEST" : "HIGH";
  std::string attr = "{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = " + list(batch) +
                     ", rhs_batching_dimensions = " + list(batch) + ", lhs_contracting_dimensions = [" +
                     std::to_string(a_contract) + "], rhs_contracting_dimensions = [" + std::to_string(c_contract) +
                     "]>, precision_config = [#stablehlo<precision " + p + ">, #stablehlo<precision " + p + ">]}";
  return b.Op("stablehlo.dot_general", {a, c}, {hlo::TensorType{a.dtype(), out}}, attr)[0];
}

REGISTER_LOWERING("matmul", [](Builder& b, const graph::Node& n, const Values& in) {
  const std::string& kind = n.StrAttr(0);
  bool with_input = n.BoolAttr(1);
  bool beta_zero = n.BoolAttr(2);
  size_t k = with_input ? 1 : 0;
  Value a = in[k], c = in[k + 1];
  DType out = a.dtype();
  DType acc = AccumulateType(out);
  a = b.Convert(a, acc);
  c = b.Convert(c, acc);
  const int64_t precision = n.attrs.size() > 3 ? n.IntAttr(3) : 0;
  Value p;
  if (kind == "mm") p = Dot(b, a, c, {}, 1, 0, precision);
  else if (kind == "bmm") p = Dot(b, a, c, {0}, 2, 1, precision);
  else if (kind == "mv") p = Dot(b, a, c, {}, 1, 0, precision);
  else p = Dot(b, a, c, {}, 0, 0, precision);
  if (with_input) {
    Value alpha = b.BroadcastTo(b.Convert(in[k + 2], acc), p.shape());
    p = b.Mul(alpha, p);
    if (!beta_zero) {
      Value self = b.BroadcastTo(b.Convert(in[0], acc), p.shape());
      Value beta = b.BroadcastTo(b.Convert(in[k + 3], acc), p.shape());
      p = b.Add(b.Mul(beta, self), p);
    }
  }
  return Values{b.Convert(p, out)};
});

}  // namespace
}  // namespace torchtpu::lower
