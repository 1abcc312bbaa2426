// Host copies of tpu tensors for a host-staged collective, and the write-back
// of results into the device tensors afterwards.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace torchtpu::aten::distributed {

class Staging {
 public:
  explicit Staging(bool enabled) : enabled_(enabled) {}

  // A host tensor with t's contents (t itself when t is not a tpu tensor or
  // staging is off). Reading a tpu tensor goes through the copy-to-CPU path,
  // which forces any pending (fused-mode) value first.
  at::Tensor In(const at::Tensor& t);
  std::vector<at::Tensor> In(const std::vector<at::Tensor>& ts);
  std::vector<std::vector<at::Tensor>> In(const std::vector<std::vector<at::Tensor>>& ts);

  // A host tensor the wire writes results into; copied back into t by
  // WriteBack(). `with_contents` for in-place collectives (all_reduce, broadcast).
  at::Tensor Out(const at::Tensor& t, bool with_contents);
  std::vector<at::Tensor> Out(const std::vector<at::Tensor>& ts, bool with_contents);
  std::vector<std::vector<at::Tensor>> Out(const std::vector<std::vector<at::Tensor>>& ts,
                                           bool with_contents);

  // Copies every Out() host tensor into its device tensor (the normal copy
  // path: views and fused mode handled there).
  void WriteBack();

 private:
  bool enabled_;
  std::vector<std::pair<at::Tensor, at::Tensor>> writebacks_;  // (device, host)
};

}  // namespace torchtpu::aten::distributed
