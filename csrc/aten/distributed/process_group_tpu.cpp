#include "aten/distributed/process_group_tpu.h"

#include <Python.h>
#include <ATen/core/ivalue.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "aten/distributed/staging.h"

namespace torchtpu::aten::distributed {
namespace {

// A collective that finished inside the call: its outputs are written, its
// future already holds them (DDP's reducer reads the bucket from it).
class CompletedWork final : public c10d::Work {
 public:
  CompletedWork(int rank, c10d::OpType type, std::vector<at::Tensor> outputs, int source_rank = -1)
      : Work(rank, type),
        outputs_(std::move(outputs)),
        source_rank_(source_rank),
        future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {
    future_->markCompleted(c10::IValue(outputs_));
    finish();
  }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds /*timeout*/) override { return true; }
  int sourceRank() const override { return source_rank_; }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

 private:
  std::vector<at::Tensor> outputs_;
  int source_rank_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

bool IsAvg(const c10d::ReduceOp& op) { return op.op_ == c10d::ReduceOp::AVG; }

// The wire (gloo) has no AVG: it runs SUM and the result is divided here,
// as NCCL's AVG does, for floating-point tensors only.
c10d::ReduceOp SumIfAvg(const c10d::ReduceOp& op, const std::vector<at::Tensor>& tensors,
                        const char* collective) {
  if (!IsAvg(op)) return op;
  for (const auto& t : tensors) {
    TORCH_CHECK(at::isFloatingType(t.scalar_type()) || at::isComplexType(t.scalar_type()),
                "torchtpu distributed: ", collective, " with ReduceOp.AVG needs a floating-point tensor, got ",
                t.scalar_type(), " of shape ", t.sizes());
  }
  return c10d::ReduceOp(c10d::ReduceOp::SUM);
}

void DivideInPlace(std::vector<at::Tensor>& hosts, int size) {
  for (auto& h : hosts) h.div_(size);
}

std::vector<at::Tensor> Flat(const std::vector<std::vector<at::Tensor>>& lists) {
  std::vector<at::Tensor> out;
  for (const auto& l : lists) out.insert(out.end(), l.begin(), l.end());
  return out;
}

}  // namespace

ProcessGroupTpu::ProcessGroupTpu(int rank, int size, Transport transport)
    : Backend(rank, size), transport_(std::move(transport)) {
  TORCH_CHECK(transport_.wire, "torchtpu distributed: the tpu backend needs a transport");
  TORCH_CHECK(transport_.stages_through_host,
              "torchtpu distributed: transport '", transport_.name,
              "' takes device tensors, which this build cannot drive yet (only host-staged transports)");
}

ProcessGroupTpu::~ProcessGroupTpu() {
  // The last reference usually goes with the Python object, under the GIL.
  // gloo's destructor joins its worker threads, and a worker may be freeing
  // a finished work's Python-owned tensors, which needs the GIL: release it
  // while the wire goes, or the two wait for each other forever.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* state = PyEval_SaveThread();
    splits_.clear();
    transport_.wire.reset();
    PyEval_RestoreThread(state);
  }
}

// Each collective: stage, run on the wire, wait (the wire's timeout applies
// there and a dead peer raises), write results back, return a done Work.
#define TPU_FINISH(work_expr, op_type, outputs)                                  \
  do {                                                                           \
    c10::intrusive_ptr<c10d::Work> wire_work = (work_expr);                      \
    wire_work->wait();                                                           \
    post();                                                                      \
    staging.WriteBack();                                                         \
    return c10::make_intrusive<CompletedWork>(getRank(), op_type, outputs);      \
  } while (0)

c10::intrusive_ptr<c10d::Backend> ProcessGroupTpu::split(const c10::intrusive_ptr<c10d::Store>& store,
                                                         const std::vector<int>& ranks,
                                                         const c10::intrusive_ptr<Options>& opts) {
  std::lock_guard<std::mutex> lock(split_mu_);
  const std::string key = opts ? opts->group_name : std::string();
  auto it = splits_.find(key);
  if (!key.empty() && it != splits_.end()) return it->second;
  // The wire's keys under their own prefix, as at creation (torchtpu/distributed).
  auto wire = transport_.wire->split(c10::make_intrusive<c10d::PrefixStore>("tpu_wire/", store), ranks, opts);
  if (!wire) return nullptr;  // this rank is not in `ranks`
  c10::intrusive_ptr<c10d::Backend> group = c10::make_intrusive<ProcessGroupTpu>(
      wire->getRank(), wire->getSize(), Transport{wire, transport_.stages_through_host, transport_.name});
  if (!key.empty()) splits_[key] = group;
  return group;
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::endCoalescing() {
  return c10::make_intrusive<CompletedWork>(getRank(), c10d::OpType::COALESCED, std::vector<at::Tensor>{});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::broadcast(std::vector<at::Tensor>& tensors,
                                                          const c10d::BroadcastOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host = staging.Out(tensors, /*with_contents=*/true);
  auto post = [] {};
  TPU_FINISH(transport_.wire->broadcast(host, opts), c10d::OpType::BROADCAST, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allreduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::AllreduceOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::AllreduceOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, tensors, "all_reduce");
  auto host = staging.Out(tensors, true);
  auto post = [&] { if (IsAvg(opts.reduceOp)) DivideInPlace(host, getSize()); };
  TPU_FINISH(transport_.wire->allreduce(host, o), c10d::OpType::ALLREDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::AllreduceCoalescedOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, tensors, "all_reduce_coalesced");
  auto host = staging.Out(tensors, true);
  auto post = [&] { if (IsAvg(opts.reduceOp)) DivideInPlace(host, getSize()); };
  TPU_FINISH(transport_.wire->allreduce_coalesced(host, o), c10d::OpType::ALLREDUCE_COALESCED, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce(std::vector<at::Tensor>& tensors,
                                                       const c10d::ReduceOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::ReduceOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, tensors, "reduce");
  auto host = staging.Out(tensors, true);
  auto post = [&] {
    if (IsAvg(opts.reduceOp) && getRank() == opts.rootRank) DivideInPlace(host, getSize());
  };
  TPU_FINISH(transport_.wire->reduce(host, o), c10d::OpType::REDUCE, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::AllgatherOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->allgather(host_out, host_in, opts), c10d::OpType::ALLGATHER, Flat(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                const c10d::AllgatherOptions& opts) {
  Staging staging(transport_.stages_through_host);
  at::Tensor host_in = staging.In(input);
  at::Tensor host_out = staging.Out(output, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->_allgather_base(host_out, host_in, opts), c10d::OpType::_ALLGATHER_BASE,
             std::vector<at::Tensor>{output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather_coalesced(
    std::vector<std::vector<at::Tensor>>& outputs, std::vector<at::Tensor>& inputs,
    const c10d::AllgatherOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->allgather_coalesced(host_out, host_in, opts), c10d::OpType::ALLGATHER_COALESCED,
             Flat(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::allgather_into_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->allgather_into_tensor_coalesced(host_out, host_in, opts),
             c10d::OpType::COALESCED, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                       std::vector<at::Tensor>& inputs,
                                                       const c10d::GatherOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->gather(host_out, host_in, opts), c10d::OpType::GATHER, Flat(outputs));
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::scatter(std::vector<at::Tensor>& outputs,
                                                        std::vector<std::vector<at::Tensor>>& inputs,
                                                        const c10d::ScatterOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->scatter(host_out, host_in, opts), c10d::OpType::SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce_scatter(std::vector<at::Tensor>& outputs,
                                                               std::vector<std::vector<at::Tensor>>& inputs,
                                                               const c10d::ReduceScatterOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::ReduceScatterOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, outputs, "reduce_scatter");
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [&] { if (IsAvg(opts.reduceOp)) DivideInPlace(host_out, getSize()); };
  TPU_FINISH(transport_.wire->reduce_scatter(host_out, host_in, o), c10d::OpType::REDUCE_SCATTER, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::_reduce_scatter_base(at::Tensor& output, at::Tensor& input,
                                                                     const c10d::ReduceScatterOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::ReduceScatterOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, {output}, "reduce_scatter_tensor");
  at::Tensor host_in = staging.In(input);
  at::Tensor host_out = staging.Out(output, false);
  auto post = [&] { if (IsAvg(opts.reduceOp)) host_out.div_(getSize()); };
  TPU_FINISH(transport_.wire->_reduce_scatter_base(host_out, host_in, o), c10d::OpType::_REDUCE_SCATTER_BASE,
             std::vector<at::Tensor>{output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::reduce_scatter_tensor_coalesced(
    std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs, const c10d::ReduceScatterOptions& opts) {
  Staging staging(transport_.stages_through_host);
  c10d::ReduceScatterOptions o = opts;
  o.reduceOp = SumIfAvg(opts.reduceOp, outputs, "reduce_scatter_tensor_coalesced");
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [&] { if (IsAvg(opts.reduceOp)) DivideInPlace(host_out, getSize()); };
  TPU_FINISH(transport_.wire->reduce_scatter_tensor_coalesced(host_out, host_in, o), c10d::OpType::COALESCED,
             outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::alltoall_base(at::Tensor& output, at::Tensor& input,
                                                              std::vector<int64_t>& output_split_sizes,
                                                              std::vector<int64_t>& input_split_sizes,
                                                              const c10d::AllToAllOptions& opts) {
  Staging staging(transport_.stages_through_host);
  at::Tensor host_in = staging.In(input);
  at::Tensor host_out = staging.Out(output, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->alltoall_base(host_out, host_in, output_split_sizes, input_split_sizes, opts),
             c10d::OpType::ALLTOALL_BASE, std::vector<at::Tensor>{output});
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::alltoall(std::vector<at::Tensor>& outputs,
                                                         std::vector<at::Tensor>& inputs,
                                                         const c10d::AllToAllOptions& opts) {
  Staging staging(transport_.stages_through_host);
  auto host_in = staging.In(inputs);
  auto host_out = staging.Out(outputs, false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->alltoall(host_out, host_in, opts), c10d::OpType::ALLTOALL, outputs);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::send(std::vector<at::Tensor>& tensors, int dst_rank, int tag) {
  Staging staging(transport_.stages_through_host);
  auto host = staging.In(tensors);
  auto post = [] {};
  TPU_FINISH(transport_.wire->send(host, dst_rank, tag), c10d::OpType::SEND, tensors);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::recv(std::vector<at::Tensor>& tensors, int src_rank, int tag) {
  Staging staging(transport_.stages_through_host);
  auto host = staging.Out(tensors, false);
  c10::intrusive_ptr<c10d::Work> wire_work = transport_.wire->recv(host, src_rank, tag);
  wire_work->wait();
  staging.WriteBack();
  return c10::make_intrusive<CompletedWork>(getRank(), c10d::OpType::RECV, tensors, src_rank);
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::recvAnysource(std::vector<at::Tensor>& tensors, int tag) {
  Staging staging(transport_.stages_through_host);
  auto host = staging.Out(tensors, false);
  c10::intrusive_ptr<c10d::Work> wire_work = transport_.wire->recvAnysource(host, tag);
  wire_work->wait();
  staging.WriteBack();
  return c10::make_intrusive<CompletedWork>(getRank(), c10d::OpType::RECVANYSOURCE, tensors,
                                            wire_work->sourceRank());
}

c10::intrusive_ptr<c10d::Work> ProcessGroupTpu::barrier(const c10d::BarrierOptions& opts) {
  Staging staging(false);
  auto post = [] {};
  TPU_FINISH(transport_.wire->barrier(opts), c10d::OpType::BARRIER, std::vector<at::Tensor>{});
}

#undef TPU_FINISH

}  // namespace torchtpu::aten::distributed
