// Lowerings of the linalg family: matrix products (mm, bmm, mv, dot and their add* forms) as dot_general in the accumulation type.
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

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
  Value p;
  if (kind == "mm") p = b.DotGeneral(a, c, {}, {}, {1}, {0});
  else if (kind == "bmm") p = b.DotGeneral(a, c, {0}, {0}, {2}, {1});
  else if (kind == "mv") p = b.DotGeneral(a, c, {}, {}, {1}, {0});
  else p = b.DotGeneral(a, c, {}, {}, {0}, {0});
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
