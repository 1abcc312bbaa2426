// OpCall: how an ATen kernel runs a lowering on tpu tensors. It gathers the
// operands' storages (each once, however many views of it are used) and
// builds the graph node; then the eager mode decides (eager_mode.h): strict
// and debug ask the compile cache for the node's program and launch it
// asynchronously (debug awaits and checks it), fused records the node into
// the device's pending graph (fused_executor.h). Fresh results become new
// tensors; results written into existing tensors (in-place ops, out=) update
// their storages in place.
#pragma once

#include <ATen/core/Tensor.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/runtime/storage.h"
#include "graph/compile_cache.h"
#include "graph/node.h"
#include "pjrt/pjrt.h"

namespace torchtpu::aten {

class OpCall {
 public:
  // `op` names the lowering; `aten_name` is what errors call it.
  explicit OpCall(std::string op);

  // A tensor operand, read through its view. 0-dim CPU tensors are taken as
  // runtime scalars, as CUDA does; other CPU tensors are an error.
  OpCall& In(const at::Tensor& t);
  // A runtime scalar operand of `type` (a rank-0 argument, so the value is not
  // part of the signature and does not cause a compile).
  OpCall& Scalar(const c10::Scalar& s, c10::ScalarType type);
  OpCall& Attr(graph::Attr a);
  OpCall& Device(int device);  // for ops without tensor operands
  // Asks the program for a device-side range check of the op's indices
  // (index_checks.h), unless TORCHTPU_CHECKS=off. Call after the op's own
  // attributes: the check mode is the node's last attribute. `negative_ok`:
  // indices in [-size, 0) count from the end (advanced indexing, take).
  OpCall& CheckIndices(bool negative_ok);

  // Logical result types, without running (compiles nothing).
  std::vector<hlo::TensorType> ResultTypes();
  std::vector<at::Tensor> Run();
  at::Tensor Run1() { return Run().at(0); }
  // Writes result i into dsts[i] (converted to its dtype; dsts must already
  // have the result's shape, or one it broadcasts to).
  void RunInto(const std::vector<at::Tensor>& dsts);

  const graph::Node& node() const { return node_; }

 private:
  int ArgFor(const at::Tensor& t);
  int ScalarArg(const c10::Scalar& s, c10::ScalarType type);
  void CheckDevice(const at::Tensor& t);
  std::vector<std::shared_ptr<pjrt::Buffer>> Launch();
  // Fused mode: records the node; results land in `outputs`' storages.
  void Record(const std::vector<StorageData*>& write_targets, const std::vector<at::Tensor>& outputs,
              const std::vector<hlo::TensorType>& types, const std::string& signature);
  // Result types by lowering the node alone (cached by its signature).
  std::vector<hlo::TensorType> ResultTypesFor(const std::string& signature);
  void UploadScalars();
  void CheckLaunch(graph::Launch& launch, const std::vector<hlo::TensorType>& types);

  struct PendingScalar {
    int arg;
    alignas(8) unsigned char bytes[16];  // complex128 is the widest
  };
  graph::Node node_;
  std::vector<PendingScalar> pending_scalars_;
  int device_ = -1;
  std::vector<std::shared_ptr<pjrt::Buffer>> buffers_;  // one per argument; storages' resolved at launch
  std::vector<StorageData*> storages_;                   // per argument (null: scalar)
  // The operands' storages stay alive until the node runs: a kernel may pass
  // a temporary (values.to(device)) whose tensor dies before Run().
  std::vector<c10::Storage> keep_alive_;
  std::vector<hlo::TensorType> last_types_;              // of the last launch
  bool checked_ = false;  // the program's last result is an index check
  // Registers the check result (the tensor holding it) and, in debug mode,
  // reads it at once.
  void TakeCheck(at::Tensor flags);
};

// Shorthands used by the op families.
graph::View ViewOf(const at::Tensor& t);
// Copies `src` (any device) into `dst` (tpu), converting dtype; broadcasting
// src to dst's shape. With non_blocking, a host source is uploaded
// asynchronously (kept alive until the transfer is done).
void CopyInto(const at::Tensor& dst, const at::Tensor& src, bool non_blocking = false);

}  // namespace torchtpu::aten
