// The out= helpers of kernels written over a functional form: the result
// copied into `out`, resized as PyTorch's out= rules say.
#pragma once

#include <tuple>

#include <ATen/ATen.h>
#include <ATen/native/Resize.h>

namespace torchtpu::aten {

inline at::Tensor& IntoOut(const at::Tensor& result, at::Tensor& out) {
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
  return out;
}

// OutOf<kFn>: the out= kernel of the functional kernel kFn, with kFn's
// parameters followed by one `at::Tensor&` per result, so that a registration
// reads `Impl("op.out", OutOf<Op>)` and the adapter is never written by hand.
template <auto kFn>
struct OutVariant;

template <typename... Args, at::Tensor (*kFn)(Args...)>
struct OutVariant<kFn> {
  static at::Tensor& Call(Args... args, at::Tensor& out) { return IntoOut(kFn(args...), out); }
};

template <typename... Args, std::tuple<at::Tensor, at::Tensor> (*kFn)(Args...)>
struct OutVariant<kFn> {
  static std::tuple<at::Tensor&, at::Tensor&> Call(Args... args, at::Tensor& out0, at::Tensor& out1) {
    auto [r0, r1] = kFn(args...);
    if (r0.defined()) IntoOut(r0, out0);
    if (r1.defined()) IntoOut(r1, out1);
    return {out0, out1};
  }
};

template <auto kFn>
constexpr auto OutOf = &OutVariant<kFn>::Call;

}  // namespace torchtpu::aten
