// The deferred-graph executor of fused eager mode. Each device has one
// pending graph: kernels record nodes into it, and a storage written by a
// recorded node holds a *pending value* (a reference to that node's result)
// instead of a buffer. At a cut the pending nodes are lowered together into
// one program whose inputs are the buffers that already exist and whose
// outputs are only the storages still alive; buffers nobody else holds are
// donated to outputs of their type, so in-place updates copy nothing.
//
// Cut points are deterministic: reading a pending value (.cpu(), .item(),
// printing, a CPU fallback, a copy to another device, a dtype reinterpretation),
// synchronize(), torchtpu.experimental.cut(), the end of optimizer.step(), a
// change of mode, and the node bound (TORCHTPU_FUSE_MAX_NODES). Nothing
// depends on time or on thread scheduling.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/compile_cache.h"
#include "graph/node.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {

enum class CutReason {
  kRead, kSynchronize, kExplicit, kOptimizerStep, kMaxNodes, kFallback, kModeChange, kReinterpret, kCapture
};
const char* CutReasonName(CutReason reason);

// One node to record. Argument i of `node` reads `arg_storages[i]` as
// `node.args[i].dtype` elements, or is the runtime scalar `scalar_buffers[i]`
// (arg_storages[i] null). Write w of the node lands in `write_targets[w]`;
// the node's unwritten outputs land in `output_storages`, fresh storages.
struct NodeRecord {
  const graph::Node* node = nullptr;
  const std::string* signature = nullptr;  // graph::Signature(*node)
  std::vector<StorageData*> arg_storages;
  std::vector<std::shared_ptr<pjrt::Buffer>> scalar_buffers;
  std::vector<hlo::TensorType> result_types;
  std::vector<StorageData*> write_targets;
  std::vector<StorageData*> output_storages;
};
void RecordNode(int device, const NodeRecord& record);

// Cuts the pending graph of `device` (all devices: CutAll): lowers, compiles
// (cached by the graph's key) and launches it, and gives every live pending
// storage its buffer. A no-op when nothing is pending.
void Cut(int device, CutReason reason);
void CutAll(CutReason reason);

// Called before a storage's buffer is read: cuts its device's graph if the
// storage holds a pending value.
void MaterializeIfPending(StorageData& s);
// The storage stops holding a pending value (it is freed, or its buffer is
// replaced from outside the graph).
void ForgetPending(StorageData& s);

// What a cut launched, for graph capture (torch.compile replay): the program,
// its arguments (and the storage each was read from; null for scalars), which
// input was donated to which output, and the storage each output went to.
struct CutRecord {
  // Null when the graph's program did not compile and its nodes ran one by
  // one (then the other fields are empty: no single program to replay).
  graph::CacheEntry* entry = nullptr;
  int device = 0;
  std::vector<std::shared_ptr<pjrt::Buffer>> inputs;
  std::vector<hlo::TensorType> input_types;
  std::vector<uint64_t> input_sources;  // StorageData::id of each; 0: a scalar
  std::vector<int> donate;
  std::vector<std::vector<StorageData*>> output_storages;  // per program result
  int64_t nodes = 0;
};
// Observes every cut on this thread's behalf while set (null: none).
using CutObserver = std::function<void(const CutRecord&, CutReason)>;
void SetCutObserver(CutObserver observer);

// Fault injection for tests of the recovery from a fused program that does
// not compile: while `fused_programs` is set every fused program fails to
// compile, and while `op` is not empty so does every program with an op
// named `op` (alone or in a fused program). Off: (false, "").
void InjectCompileFailure(bool fused_programs, std::string op);

// Forgets which graphs were seen and how many recent cuts compiled, so new
// graphs compile at once again (tests start each from a fresh history).
void ClearCompileHistory();

// Statistics and the cut log (for tests and the benchmarks).
struct FusedStats {
  int64_t nodes_recorded = 0;
  int64_t cuts = 0;
  int64_t cuts_op_by_op = 0;  // cuts of never-seen graphs run one op at a time while most cuts compile
  int64_t nodes_pending = 0;
};
FusedStats GetFusedStats();
struct CutLogEntry {
  uint64_t key_hash;  // FNV-1a of the program key
  int64_t nodes;
  int device;
  CutReason reason;
};
void SetCutLogging(bool on);  // turning it on clears the log
std::vector<CutLogEntry> CutLog();

}  // namespace torchtpu::aten
