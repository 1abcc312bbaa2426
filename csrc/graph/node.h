// The deferred computation: one node is one ATen-level op applied to views of
// flat device buffers. A node says everything that determines its program, so
// its signature (signature.h) is the compile-cache key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "hlo/types.h"

namespace torchtpu::graph {

// A strided view (PyTorch's sizes, strides, storage offset, in elements) over
// a flat buffer of `base_numel` elements.
struct View {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;

  int64_t numel() const { return hlo::NumElements(sizes); }
  // Row-major dense, ignoring the strides of size-1 dimensions.
  bool IsContiguous() const;
  // Contiguous, starting at 0 and covering all `base_numel` elements.
  bool CoversWhole(int64_t base_numel) const { return offset == 0 && numel() == base_numel && IsContiguous(); }
};

using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

// A program argument: a flat device buffer (rank 1) or a runtime scalar
// (rank 0). Every tensor storage lives on the device as one rank-1 buffer;
// programs return their outputs flattened to rank 1 as well.
using ArgType = hlo::TensorType;

// An operand of the op: argument `arg`, read through `view` (absent for
// scalars and for arguments used as they are). With offset_arg >= 0 the view
// is contiguous and its start is not part of the program: the program reads
// it from argument `offset_arg` (an i64 scalar), so the rows of a tensor,
// x[0], x[1], ..., share one program instead of compiling one per offset.
// view->offset still holds the value (for everything but the program).
struct Input {
  int arg = 0;
  std::optional<View> view;
  int offset_arg = -1;
};

// Result `output` of the op is converted to the destination dtype and written
// into `view` of argument `arg`; the program returns the updated buffer in
// place of the result, and the argument is donated. With arg == -1 the view
// covers a fresh buffer of type `base` whole, so no old contents are needed.
struct Write {
  int output = 0;
  int arg = -1;
  View view;
  hlo::TensorType base;  // the destination buffer: rank 1
  // As Input::offset_arg: a contiguous view (arg >= 0) whose start the
  // program reads from this i64 scalar argument, so writing x[i] for every
  // i is one program.
  int offset_arg = -1;
};

struct Node {
  std::string op;
  std::vector<Attr> attrs;
  std::vector<ArgType> args;
  std::vector<Input> inputs;
  std::vector<Write> writes;

  // Typed accessors for lowerings; throw on a wrong kind or index.
  int64_t IntAttr(size_t i) const;
  double FloatAttr(size_t i) const;
  bool BoolAttr(size_t i) const;
  const std::string& StrAttr(size_t i) const;
  const std::vector<int64_t>& IntsAttr(size_t i) const;

  // Shape and dtype of input i as the op sees it.
  hlo::TensorType InputType(size_t i) const;
  // "add(f32[2,3], f32[3])": for error messages and statistics.
  std::string Describe() const;
};

}  // namespace torchtpu::graph
