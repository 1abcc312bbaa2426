#include "aten/runtime/fused_executor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "aten/runtime/eager_mode.h"
#include "aten/runtime/errors.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/program_range.h"
#include "graph/signature.h"

namespace torchtpu::aten {
namespace {

// A pending graph that never repeats (a random op stream, or several threads
// interleaving their ops into one device's graph) would compile a new fused
// program at nearly every cut, each compile costing far more than running the
// graph's ops. So once most recent cuts compiled (kDegradedMisses of the last
// kWindow), a graph whose program is not cached runs its ops one by one
// through their own programs, as the strict mode would — but only when every
// one of its ops already appeared in an earlier graph that missed: the ops
// repeat while the graphs do not, so the single-op programs are compiled once
// and reused. A graph with a new op (a new shape above all: a model fed a new
// sequence length each step) compiles as one program, which costs one compile
// where its ops alone would cost one each. A graph seen before also compiles:
// one that repeats compiles on its second sighting, its cuts then hit the
// cache, and once hits fill the window every new graph compiles at once again.
class CompileHistory {
 public:
  bool Degraded() const { return filled_ == kWindow && __builtin_popcount(misses_) >= kDegradedMisses; }
  bool Seen(uint64_t key_hash) const { return seen_.count(key_hash) > 0; }
  bool AllOpsSeen(const std::vector<uint64_t>& op_hashes) const {
    for (uint64_t h : op_hashes) {
      if (!ops_seen_.count(h)) return false;
    }
    return true;
  }
  void RecordHit() { Shift(false); }
  // A cut whose program was not in the cache (compiled, or its ops ran one
  // by one), with the hashes of its ops' signatures.
  void RecordMiss(uint64_t key_hash, const std::vector<uint64_t>& op_hashes) {
    Shift(true);
    // Bounded; a repeat then compiles one sighting later.
    if (seen_.size() >= kSeenMax) seen_.clear();
    seen_.insert(key_hash);
    if (ops_seen_.size() + op_hashes.size() > kSeenMax) ops_seen_.clear();
    ops_seen_.insert(op_hashes.begin(), op_hashes.end());
  }
  void Clear() { *this = CompileHistory(); }

 private:
  void Shift(bool missed) {
    misses_ = (misses_ << 1) | (missed ? 1u : 0u);
    if (filled_ < kWindow) ++filled_;
  }
  static constexpr int kWindow = 32;  // bits of misses_
  static constexpr int kDegradedMisses = 24;
  static constexpr size_t kSeenMax = 4096;
  uint32_t misses_ = 0;
  int filled_ = 0;
  std::unordered_set<uint64_t> seen_;      // program keys of missed cuts
  std::unordered_set<uint64_t> ops_seen_;  // op signatures in missed cuts
};

// One device's pending graph. Recursive: a cut may run while a node is being
// recorded (the node bound), and freeing a storage inside a cut forgets it.
struct PendingGraph {
  std::recursive_mutex mu;
  graph::FusedGraph graph;
  std::vector<std::shared_ptr<pjrt::Buffer>> inputs;  // program arguments
  std::vector<uint64_t> input_sources;                // StorageData::id; 0: a scalar
  std::unordered_map<const pjrt::Buffer*, int> input_of;
  std::unordered_set<StorageData*> holders;           // storages holding a pending value
  CompileHistory history;
};

// Never destroyed, like the runtime: storages freed during interpreter
// shutdown still forget their pending values here.
std::vector<std::unique_ptr<PendingGraph>>& Graphs() {
  static auto* graphs = [] {
    auto* g = new std::vector<std::unique_ptr<PendingGraph>>;
    for (int i = 0; i < Runtime::Get().device_count(); ++i) g->push_back(std::make_unique<PendingGraph>());
    return g;
  }();
  return *graphs;
}

PendingGraph& GraphOf(int device) { return *Graphs().at(device); }

std::atomic<int64_t> g_nodes_recorded{0};
std::atomic<int64_t> g_cuts{0};
std::atomic<int64_t> g_cuts_op_by_op{0};  // cuts whose ops ran one by one (CompileHistory)
thread_local CutObserver t_observer;

// InjectCompileFailure's state: checked with one atomic load when off.
std::atomic<bool> g_inject{false};
std::mutex g_inject_mu;
bool g_inject_fused = false;
std::string g_inject_op;

// Throws when the injected failure applies to the program of `graph` (a
// fused program) or of `node` alone.
void MaybeFailCompile(const graph::FusedGraph* graph, const graph::Node* node) {
  if (!g_inject.load()) return;
  std::lock_guard<std::mutex> lock(g_inject_mu);
  bool fail = false;
  if (node) fail = !g_inject_op.empty() && node->op == g_inject_op;
  if (graph) {
    fail = g_inject_fused;
    for (int n = 0; !fail && !g_inject_op.empty() && n < graph->num_nodes(); ++n) {
      fail = graph->node(n).op == g_inject_op;
    }
  }
  if (fail) {
    throw graph::LoweringError("torchtpu: cannot compile " + (node ? node->Describe() : graph->Describe()) +
                               ": injected compile failure (torchtpu._C._inject_compile_failure)");
  }
}

std::mutex g_log_mu;
bool g_log_on = false;
std::vector<CutLogEntry> g_log;

uint64_t Fnv1a(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

int AddInput(PendingGraph& g, std::shared_ptr<pjrt::Buffer> buffer, uint64_t source, const hlo::TensorType& type) {
  if (source != 0) {
    auto it = g.input_of.find(buffer.get());
    if (it != g.input_of.end()) return it->second;
  }
  int index = g.graph.AddInput(type);
  if (source != 0) g.input_of.emplace(buffer.get(), index);
  g.inputs.push_back(std::move(buffer));
  g.input_sources.push_back(source);
  return index;
}

void MarkPending(PendingGraph& g, StorageData& s, graph::ValueRef ref, hlo::DType dtype) {
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.buffer.reset();  // a graph input if it was read: then the graph holds it
    s.dtype = dtype;
    s.lost.reset();    // a new value
  }
  s.pending_ref = ref;
  s.ever_pending.store(true);
  s.pending.store(true);
  g.holders.insert(&s);
}

// A storage whose pending value will never be computed: reading it raises
// `why` (never zeros, never stale contents).
void Lose(StorageData& s, const std::shared_ptr<const std::string>& why) {
  std::lock_guard<std::mutex> lock(s.mu);
  s.buffer.reset();
  s.lost = why;
  s.pending.store(false);
}

// Forgets everything recorded. Storages still pending lose their values:
// only after a failed execution, whose error the caller is raising.
void Reset(PendingGraph& g, const char* error = nullptr) {
  if (!g.holders.empty()) {
    auto why = std::make_shared<const std::string>(
        std::string("torchtpu: this tensor's value was lost: the fused program computing it failed: ") +
        (error ? error : "unknown error"));
    for (StorageData* s : g.holders) Lose(*s, why);
  }
  g.holders.clear();
  g.graph.Clear();
  g.inputs.clear();
  g.input_sources.clear();
  g.input_of.clear();
}

// The message of the exception being handled (for Reset).
std::string CurrentErrorMessage() {
  try {
    throw;
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

// Donation: an input that only the graph still holds (its storage was
// overwritten or freed) gives its memory to an output of its type —
// preferably the new value of the storage it was read from, so an in-place
// update stays in place.
std::vector<int> ChooseDonations(const PendingGraph& g, const std::vector<graph::ValueRef>& outputs,
                                 const std::map<uint64_t, int>& output_of_storage) {
  std::vector<int> donate(g.inputs.size(), -1);
  std::vector<bool> taken(outputs.size(), false);
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    if (g.inputs[i].use_count() != 1) continue;
    const hlo::TensorType& type = g.graph.input_type(static_cast<int>(i));
    if (type.rank() != 1) continue;
    int chosen = -1;
    auto own = output_of_storage.find(g.input_sources[i]);
    if (own != output_of_storage.end() && !taken[own->second] &&
        g.graph.FlatType(outputs[own->second]) == type) {
      chosen = own->second;
    }
    for (size_t o = 0; chosen < 0 && o < outputs.size(); ++o) {
      if (!taken[o] && g.graph.FlatType(outputs[o]) == type) chosen = static_cast<int>(o);
    }
    if (chosen >= 0) {
      donate[i] = chosen;
      taken[chosen] = true;
    }
  }
  return donate;
}

// The fused program did not compile. Run the graph's nodes one by one, each
// as its own program (as the strict mode would have): every value that does
// not depend on a failing op is computed as usual; storages whose value
// depends on one lose it (reading raises the op's error), and the first
// failure is raised here, naming the op, its shapes and dtypes. When every
// node runs alone (the fused program's failure was not any one op's), the
// results are complete and the failure is only warned about.
// With `fused_error` null the fused program was never tried (CompileHistory):
// nothing to warn about.
void RunNodeByNode(int device, PendingGraph& g, CutReason reason, const std::string* fused_error) {
  Runtime& rt = Runtime::Get();
  const int n_nodes = g.graph.num_nodes();
  std::vector<std::vector<std::shared_ptr<pjrt::Buffer>>> results(n_nodes);
  std::vector<std::shared_ptr<const std::string>> failed(n_nodes);
  std::exception_ptr first_error;
  for (int n = 0; n < n_nodes; ++n) {
    const graph::Node& node = g.graph.node(n);
    std::vector<pjrt::Buffer*> args;
    std::vector<int64_t> held;  // written inputs someone else still holds: copied, not donated
    for (const graph::ValueRef& v : g.graph.node_args(n)) {
      const std::shared_ptr<pjrt::Buffer>* b = nullptr;
      if (v.node < 0) {
        b = &g.inputs.at(v.index);
      } else if (failed[v.node]) {
        failed[n] = failed[v.node];
        break;
      } else {
        b = &results[v.node].at(v.index);
      }
      if (b->use_count() > 1) held.push_back(static_cast<int64_t>(args.size()));
      args.push_back(b->get());
    }
    if (failed[n]) continue;
    try {
      std::shared_ptr<graph::CacheEntry> entry = GuardLowering(node, [&] {
        MaybeFailCompile(nullptr, &node);
        return rt.cache().Get(node, device);
      });
      TORCHTPU_PROGRAM_RANGE(entry->description);  // profiler row for this launch (program_range.h)
      graph::Launch launch = GuardExecution(node, [&] { return graph::Execute(*entry, args, held); });
      rt.Track(device, std::move(launch.done));
      for (auto& r : launch.results) results[n].emplace_back(std::move(r));
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
      failed[n] = std::make_shared<const std::string>(
          "torchtpu: this tensor's value was lost: an op it depends on failed in the fused mode: " +
          CurrentErrorMessage());
    }
  }
  for (StorageData* s : g.holders) {
    const graph::ValueRef ref = s->pending_ref;
    if (failed[ref.node]) {
      Lose(*s, failed[ref.node]);
    } else {
      std::lock_guard<std::mutex> lock(s->mu);
      s->buffer = results[ref.node].at(ref.index);
      s->pending.store(false);
    }
  }
  g.holders.clear();
  const int64_t nodes = g.graph.num_nodes();
  Reset(g);
  if (t_observer) {
    CutRecord record;
    record.device = device;
    record.nodes = nodes;
    t_observer(record, reason);
  }
  if (first_error) std::rethrow_exception(first_error);
  if (!fused_error) return;
  TORCH_WARN("torchtpu: a fused program of ", n_nodes, " ops failed to compile; its ops ran one by one ",
             "instead (results are complete): ", fused_error->substr(0, 2000));
}

void CutLocked(int device, PendingGraph& g, CutReason reason) {
  if (g.graph.empty()) return;
  try {
    // Outputs: the values of the live pending storages, in graph order.
    std::vector<std::pair<graph::ValueRef, StorageData*>> live;
    for (StorageData* s : g.holders) live.emplace_back(s->pending_ref, s);
    std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    CutRecord record;
    std::vector<graph::ValueRef> outputs;
    std::map<uint64_t, int> output_of_storage;
    for (const auto& [ref, s] : live) {
      if (outputs.empty() || !(outputs.back() == ref)) {
        outputs.push_back(ref);
        record.output_storages.emplace_back();
      }
      record.output_storages.back().push_back(s);
      output_of_storage[s->id] = static_cast<int>(outputs.size() - 1);
    }
    std::vector<int> donate = ChooseDonations(g, outputs, output_of_storage);
    std::string key = g.graph.Key(outputs, donate);

    Runtime& rt = Runtime::Get();
    const uint64_t key_hash = Fnv1a(key);
    bool op_by_op = false;
    if (rt.cache().Holds(key, device)) {
      g.history.RecordHit();
    } else {
      std::vector<uint64_t> op_hashes(g.graph.num_nodes());
      for (int i = 0; i < g.graph.num_nodes(); ++i) op_hashes[i] = Fnv1a(graph::Signature(g.graph.node(i)));
      // Graph capture (torch.compile) needs the one program: never op by op then.
      op_by_op = !t_observer && g.history.Degraded() && !g.history.Seen(key_hash) &&
                 g.history.AllOpsSeen(op_hashes);
      g.history.RecordMiss(key_hash, op_hashes);
    }
    if (op_by_op) {
      const int64_t nodes = g.graph.num_nodes();
      g_cuts.fetch_add(1);
      g_cuts_op_by_op.fetch_add(1);
      {
        std::lock_guard<std::mutex> lock(g_log_mu);
        if (g_log_on) g_log.push_back(CutLogEntry{key_hash, nodes, device, reason});
      }
      RunNodeByNode(device, g, reason, nullptr);
      return;
    }
    std::shared_ptr<graph::CacheEntry> entry;
    try {
      MaybeFailCompile(&g.graph, nullptr);
      entry = rt.cache().GetOrCompile(key, device, [&] { return g.graph.Describe(); },
                                       [&] { return g.graph.Lower(outputs, donate); });
    } catch (const graph::LoweringError& e) {
      const std::string error = e.what();
      RunNodeByNode(device, g, reason, &error);
      return;
    } catch (const pjrt::Error& e) {
      const std::string error = e.what();
      RunNodeByNode(device, g, reason, &error);
      return;
    }
    std::vector<pjrt::Buffer*> args;
    args.reserve(g.inputs.size());
    for (auto& b : g.inputs) args.push_back(b.get());
    graph::Launch launch;
    {
      TORCHTPU_PROGRAM_RANGE(entry->description);  // profiler row for this launch (program_range.h)
      try {
        launch = graph::Execute(*entry, args);
      } catch (const pjrt::Error& e) {
        RaiseDeviceError(g.graph.Describe(), e);
      }
      rt.Track(device, std::move(launch.done));
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      std::shared_ptr<pjrt::Buffer> buffer(std::move(launch.results.at(o)));
      for (StorageData* s : record.output_storages[o]) {
        std::lock_guard<std::mutex> lock(s->mu);
        s->buffer = buffer;
        s->pending.store(false);
      }
    }
    g.holders.clear();
    g_cuts.fetch_add(1);
    {
      std::lock_guard<std::mutex> lock(g_log_mu);
      if (g_log_on) g_log.push_back(CutLogEntry{key_hash, g.graph.num_nodes(), device, reason});
    }
    if (t_observer) {
      record.entry = entry.get();
      record.device = device;
      record.inputs = g.inputs;
      for (int i = 0; i < g.graph.num_inputs(); ++i) record.input_types.push_back(g.graph.input_type(i));
      record.input_sources = g.input_sources;
      record.donate = donate;
      record.nodes = g.graph.num_nodes();
      t_observer(record, reason);
    }
    Reset(g);
  } catch (...) {
    Reset(g, CurrentErrorMessage().c_str());
    throw;
  }
}

}  // namespace

const char* CutReasonName(CutReason reason) {
  switch (reason) {
    case CutReason::kRead: return "read";
    case CutReason::kSynchronize: return "synchronize";
    case CutReason::kExplicit: return "explicit";
    case CutReason::kOptimizerStep: return "optimizer_step";
    case CutReason::kMaxNodes: return "max_nodes";
    case CutReason::kFallback: return "fallback";
    case CutReason::kModeChange: return "mode_change";
    case CutReason::kReinterpret: return "reinterpret";
    case CutReason::kCapture: return "capture";
  }
  return "unknown";
}

void RecordNode(int device, const NodeRecord& r) {
  PendingGraph& g = GraphOf(device);
  std::lock_guard<std::recursive_mutex> lock(g.mu);
  const graph::Node& node = *r.node;
  // A pending value read as another element type needs its bytes: cut first.
  for (size_t i = 0; i < node.args.size(); ++i) {
    StorageData* s = r.arg_storages[i];
    if (s && s->pending.load() && s->dtype != node.args[i].dtype) {
      CutLocked(device, g, CutReason::kReinterpret);
      break;
    }
  }
  std::vector<graph::ValueRef> refs(node.args.size());
  for (size_t i = 0; i < node.args.size(); ++i) {
    StorageData* s = r.arg_storages[i];
    if (!s) {
      refs[i] = graph::ValueRef{-1, AddInput(g, r.scalar_buffers.at(i), 0, node.args[i])};
    } else if (s->pending.load()) {
      refs[i] = s->pending_ref;
    } else {
      refs[i] = graph::ValueRef{-1, AddInput(g, BufferAs(*s, node.args[i].dtype), s->id, node.args[i])};
    }
  }
  int n = g.graph.AddNode(node, std::move(refs), r.result_types, *r.signature);
  const int writes = static_cast<int>(node.writes.size());
  for (int w = 0; w < writes; ++w) {
    MarkPending(g, *r.write_targets.at(w), graph::ValueRef{n, w}, node.writes[w].base.dtype);
  }
  for (size_t i = 0; i < r.output_storages.size(); ++i) {
    const int index = writes + static_cast<int>(i);
    MarkPending(g, *r.output_storages[i], graph::ValueRef{n, index}, r.result_types.at(index).dtype);
  }
  g_nodes_recorded.fetch_add(1, std::memory_order_relaxed);
  if (g.graph.num_nodes() >= FuseMaxNodes()) CutLocked(device, g, CutReason::kMaxNodes);
}

void Cut(int device, CutReason reason) {
  if (!Runtime::Initialized()) return;
  PendingGraph& g = GraphOf(device);
  std::lock_guard<std::recursive_mutex> lock(g.mu);
  CutLocked(device, g, reason);
}

void CutAll(CutReason reason) {
  if (!Runtime::Initialized()) return;
  for (int d = 0; d < static_cast<int>(Graphs().size()); ++d) Cut(d, reason);
}

void MaterializeIfPending(StorageData& s) {
  if (!s.pending.load()) return;
  PendingGraph& g = GraphOf(s.device);
  std::lock_guard<std::recursive_mutex> lock(g.mu);
  if (s.pending.load()) CutLocked(s.device, g, CutReason::kRead);
}

void ForgetPending(StorageData& s) {
  PendingGraph& g = GraphOf(s.device);
  std::lock_guard<std::recursive_mutex> lock(g.mu);
  if (g.holders.erase(&s)) s.pending.store(false);
}

void SetCutObserver(CutObserver observer) { t_observer = std::move(observer); }

void ClearCompileHistory() {
  if (!Runtime::Initialized()) return;
  for (auto& g : Graphs()) {
    std::lock_guard<std::recursive_mutex> lock(g->mu);
    g->history.Clear();
  }
}

void InjectCompileFailure(bool fused_programs, std::string op) {
  std::lock_guard<std::mutex> lock(g_inject_mu);
  g_inject_fused = fused_programs;
  g_inject_op = std::move(op);
  g_inject.store(fused_programs || !g_inject_op.empty());
}

FusedStats GetFusedStats() {
  FusedStats stats;
  stats.nodes_recorded = g_nodes_recorded.load();
  stats.cuts = g_cuts.load();
  stats.cuts_op_by_op = g_cuts_op_by_op.load();
  if (Runtime::Initialized()) {
    for (auto& g : Graphs()) {
      std::lock_guard<std::recursive_mutex> lock(g->mu);
      stats.nodes_pending += g->graph.num_nodes();
    }
  }
  return stats;
}

void SetCutLogging(bool on) {
  std::lock_guard<std::mutex> lock(g_log_mu);
  g_log_on = on;
  g_log.clear();
}

std::vector<CutLogEntry> CutLog() {
  std::lock_guard<std::mutex> lock(g_log_mu);
  return g_log;
}

}  // namespace torchtpu::aten
