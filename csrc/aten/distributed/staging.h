// Host copies of tpu tensors for a host-staged collective, and the write-back
// of results into the device tensors afterwards. Host memory comes from the
// process's HostPool (host_pool.h) and goes back to it when the collective is
// done; a result that fills its whole device tensor is written back by
// lending its host block to the device (aten/runtime/host_alias.h: no copy
// on the CPU plugin) rather than by copying.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

namespace torchtpu::aten::distributed {

class Staging {
 public:
  explicit Staging(bool enabled) : enabled_(enabled) {}
  // Hands every host block back to the pool (those written back by lending
  // go back when the device lets go of them).
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

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

  // Writes every Out() host tensor into its device tensor: by lending the
  // host block where the device tensor is a whole storage, otherwise through
  // the normal copy path (views and fused mode handled there).
  void WriteBack();

 private:
  // A pooled host tensor with t's sizes and dtype, holding t's contents.
  at::Tensor HostCopy(const at::Tensor& t);

  bool enabled_;
  std::vector<at::Tensor> inputs_;                             // In() host blocks
  std::vector<std::pair<at::Tensor, at::Tensor>> writebacks_;  // (device, host)
};

}  // namespace torchtpu::aten::distributed
