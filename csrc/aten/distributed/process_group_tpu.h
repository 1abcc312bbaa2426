// The c10d backend for device type `tpu` (torch.distributed backend "tpu").
//
// Every collective runs on the transport (transport.h). With a host-staged
// transport, tpu tensors are copied to the host, the wire runs the collective
// there, and results are written back through the normal copy path before the
// call returns: the returned Work is already complete, so wait() orders later
// ops after it trivially and async_op=True is honoured (it just never has
// anything left to wait for). Non-tpu (CPU) tensors go to the wire as they are,
// so `init_process_group("tpu")` also serves CPU tensors (object collectives).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <map>
#include <mutex>

#include "aten/distributed/transport.h"

namespace torchtpu::aten::distributed {

class ProcessGroupTpu final : public c10d::Backend {
 public:
  ProcessGroupTpu(int rank, int size, Transport transport);
  ~ProcessGroupTpu() override;

  const std::string getBackendName() const override { return "tpu"; }
  const Transport& transport() const { return transport_; }

  void setTimeout(std::chrono::milliseconds timeout) override { transport_.wire->setTimeout(timeout); }
  c10::intrusive_ptr<Options> getBackendOptions() override { return transport_.wire->getBackendOptions(); }

  // Splitting (DeviceMesh and split_group use it once init_process_group had a
  // device_id) splits the wire. The parent is registered for both cpu and tpu,
  // and ProcessGroup::splitGroup splits each device's backend: the second
  // request for the same group returns the first split, as one backend serves both.
  bool supportsSplitting() const override { return transport_.wire->supportsSplitting(); }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& opts) override;
  // Collectives complete inside each call, so a coalescing block has nothing
  // to batch: each op runs at once and the block's Work is complete.
  void startCoalescing() override {}
  c10::intrusive_ptr<c10d::Work> endCoalescing() override;

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors,
                                        const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<std::vector<at::Tensor>>& outputs,
                                                     std::vector<at::Tensor>& inputs,
                                                     const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(std::vector<at::Tensor>& outputs,
                                                                 std::vector<at::Tensor>& inputs,
                                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs,
                                        const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(std::vector<at::Tensor>& outputs,
                                                std::vector<std::vector<at::Tensor>>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_split_sizes,
                                               std::vector<int64_t>& input_split_sizes,
                                               const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(std::vector<at::Tensor>& outputs,
                                          std::vector<at::Tensor>& inputs,
                                          const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts, bool wait_all_ranks) override {
    transport_.wire->monitoredBarrier(opts, wait_all_ranks);
  }
  void setSequenceNumberForGroup() override { transport_.wire->setSequenceNumberForGroup(); }
  uint64_t getSequenceNumberForGroup() override { return transport_.wire->getSequenceNumberForGroup(); }

 private:
  Transport transport_;
  std::mutex split_mu_;
  std::map<std::string, c10::intrusive_ptr<c10d::Backend>> splits_;  // by group name
};

}  // namespace torchtpu::aten::distributed
