// Lowerings of the copy family: copy (a view read and written through the node's views) and resize_flat (keep the leading elements, zero the new tail).
#include "graph/lowering.h"
#include "lower/lower_util.h"

namespace torchtpu::lower {
namespace {

REGISTER_LOWERING("copy", [](hlo::Builder&, const graph::Node&, const std::vector<hlo::Value>& in) {
  return std::vector<hlo::Value>{in[0]};
});

REGISTER_LOWERING("resize_flat", [](hlo::Builder& b, const graph::Node& n, const std::vector<hlo::Value>& in) {
  int64_t old_numel = in[0].shape()[0], new_numel = n.IntAttr(0);
  if (new_numel <= old_numel) return std::vector<hlo::Value>{b.SliceDim(in[0], 0, 0, new_numel)};
  hlo::Value zero = b.Constant(hlo::Literal::Int(0), in[0].dtype(), {});
  return std::vector<hlo::Value>{b.Pad(in[0], zero, {0}, {new_numel - old_numel}, {0})};
});

}  // namespace
}  // namespace torchtpu::lower
