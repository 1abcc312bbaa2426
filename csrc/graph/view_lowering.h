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
// A contiguous view whose start is the runtime i64 scalar `start`
// (Input::offset_arg); view.offset is not used. The start must leave room
// for the view (a valid tensor's always does): dynamic_slice would clamp it.
hlo::Value ReadContiguousViewAt(hlo::Builder& b, hlo::Value base, const View& view, hlo::Value start);
// Returns `base` with view's elements replaced by `value` (shape view.sizes,
// dtype of base).
hlo::Value WriteView(hlo::Builder& b, hlo::Value base, const View& view, hlo::Value value);
// WriteView of a contiguous view whose start is the runtime i64 scalar `start`.
hlo::Value WriteContiguousViewAt(hlo::Builder& b, hlo::Value base, const View& view, hlo::Value value,
                                 hlo::Value start);

}  // namespace torchtpu::graph
