// Turning lowering, compile and device failures into PyTorch errors that
// name the op, its shapes and dtypes; out-of-memory becomes
// torch.OutOfMemoryError.
#pragma once

#include <c10/util/Exception.h>

#include "graph/lowering.h"
#include "graph/node.h"
#include "hlo/builder.h"
#include "pjrt/pjrt.h"

namespace torchtpu::aten {

[[noreturn]] void RaiseDeviceError(const graph::Node& node, const pjrt::Error& e);
// The same for a program described by `what` ("fused graph of 12 ops: ...").
[[noreturn]] void RaiseDeviceError(const std::string& what, const pjrt::Error& e);
[[noreturn]] void RaiseLoweringError(const graph::LoweringError& e);

template <typename Fn>
decltype(auto) GuardLowering(const graph::Node& node, Fn&& fn) {
  try {
    return fn();
  } catch (const graph::LoweringError& e) {
    RaiseLoweringError(e);
  } catch (const pjrt::Error& e) {
    RaiseDeviceError(node, e);
  }
}

template <typename Fn>
decltype(auto) GuardExecution(const graph::Node& node, Fn&& fn) {
  try {
    return fn();
  } catch (const pjrt::Error& e) {
    RaiseDeviceError(node, e);
  }
}

}  // namespace torchtpu::aten
