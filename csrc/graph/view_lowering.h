// Reading and writing a strided view of a flat buffer inside a program.
// Reads become slice/reshape/transpose/broadcast where the layout allows it
// and a gather otherwise; writes become a reshape (whole buffer), a
// dynamic-update-slice (contiguous range) or a scatter.
#pragma once

#include "graph/node.h"
#include "hlo/builder.h"

namespace torchtpu::graph {

// `base` is rank 1. Returns a value of shape view.sizes.
hlo::Value ReadView(hlo::Builder& b, hlo::Value base, const View& view);
// Returns `base` with view's elements replaced by `value` (shape view.sizes,
// dtype of base).
hlo::Value WriteView(hlo::Builder& b, hlo::Value base, const View& view, hlo::Value value);

}  // namespace torchtpu::graph
