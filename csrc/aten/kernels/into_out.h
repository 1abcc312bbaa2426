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

// Several results (each an at::Tensor): one out= tensor per result, in order;
// a result the kernel leaves undefined (an optional gradient) leaves its out
// tensor as it is.
template <typename... Args, typename... Results, std::tuple<Results...> (*kFn)(Args...)>
struct OutVariant<kFn> {
  static std::tuple<Results&...> Call(Args... args, Results&... outs) {
    std::apply([&](const auto&... results) { (IntoOutIfDefined(results, outs), ...); }, kFn(args...));
    return {outs...};
  }
  static void IntoOutIfDefined(const at::Tensor& result, at::Tensor& out) {
    if (result.defined()) IntoOut(result, out);
  }
};

template <auto kFn>
constexpr auto OutOf = &OutVariant<kFn>::Call;

}  // namespace torchtpu::aten
