// The in-memory tier of the compile cache: signature -> compiled program, with
// per-entry statistics. A hit costs one signature and one hash lookup; no text
// is built. Entries are never evicted, so references stay valid.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/disk_cache.h"
#include "graph/lowering.h"
#include "graph/node.h"
#include "pjrt/pjrt.h"

namespace torchtpu::graph {

struct CacheEntry {
  std::string description;  // "add(f32[2,3], f32[3])"
  int device = 0;           // index into the client's addressable devices
  Program program;
  std::shared_ptr<pjrt::Executable> executable;  // shared: a captured graph keeps it past Clear()
  int64_t hits = 0;
  double compile_seconds = 0.0;
  double last_use = 0.0;    // seconds since the epoch
  uint64_t use_order = 0;   // the cache's use count at its last use: least recent goes first
  const char* source = "compiled";  // or "executables" / "programs": the disk tier it came from
  // Filled only while profiling (SetProfiling): launches awaited and timed.
  int64_t calls = 0;
  double device_seconds = 0.0;
};

struct CacheStats {
  std::string description;
  int device;
  int64_t hits;
  double compile_seconds;
  double last_use;
  std::string source;
  int64_t calls;
  double device_seconds;
};

// Counters of every tier (torchtpu.compile_cache_stats()).
struct CompileCounters {
  int64_t memory_hits = 0;
  int64_t memory_misses = 0;
  int64_t memory_evictions = 0;     // programs dropped past the memory tier's limit
  int64_t memory_programs = 0;      // programs held now
  int64_t memory_limit = 0;         // 0: no limit
  int64_t mapping_budget = 0;       // host mappings past which half the tier is dropped (0: unwatched)
  int64_t lowerings = 0;            // programs lowered (not found in memory or the program tier)
  int64_t compiles = 0;             // programs compiled by the plugin
  int64_t misses_after_warmup = 0;  // in-memory misses after warmup was declared done
  bool warmup_done = false;
  bool programs_on = false, executables_on = false;
  std::string programs_dir, executables_dir;
  DiskTierStats programs, executables;
};

// Called (outside the cache's lock) on an in-memory miss after warmup is
// declared done, with the program's description; may throw to refuse the
// compile (TORCHTPU_RECOMPILE=error).
using UnexpectedCompileHook = std::function<void(const std::string& description)>;

class CompileCache {
 public:
  explicit CompileCache(std::shared_ptr<pjrt::Client> client) : client_(std::move(client)) {}

  // The compiled program for `node` on `device`, lowering and compiling on a
  // miss. Throws LoweringError naming the op on failure. Shared: an entry the
  // memory tier evicts (or Clear() drops) stays valid for whoever runs it.
  std::shared_ptr<CacheEntry> Get(const Node& node, int device);
  // The same for any program: `key` is its exact signature bytes (a node's
  // Signature, or a FusedGraph's Key); `lower` builds it on a miss and
  // `describe` names it in statistics and errors.
  std::shared_ptr<CacheEntry> GetOrCompile(const std::string& key, int device,
                                           const std::function<std::string()>& describe,
                                           const std::function<Program()>& lower);
  // At most `programs` compiled programs in memory (0: no limit); the least
  // recently used go first. Every loaded executable holds host resources —
  // with the CPU plugin, a few memory mappings of JIT code each, and a process
  // has a fixed number of those (vm.max_map_count): an unbounded tier crashed
  // inside the plugin after some 20,000 programs.
  void SetMemoryLimit(int64_t programs);
  // The count limit alone does not bound the mappings: a program maps JIT
  // code per kernel, from one to hundreds. So every kMappingCheckEvery
  // compiles the cache counts the process's mappings, and past `budget`
  // (default: half of vm.max_map_count, leaving the rest to buffers, threads
  // and libraries) drops its least recently used half, until under it.
  // Negative: the default; 0: never check. It never goes below `floor`
  // programs: the working set (a server's warmed-up programs) stays, even
  // when the mappings are mostly someone else's.
  void SetMappingBudget(int64_t budget, size_t floor = kMappingFloor);
  static constexpr size_t kMappingFloor = 512;
  static constexpr int kMappingCheckEvery = 16;
  // Whether the in-memory tier holds `key`'s program for `device` (no count).
  bool Holds(const std::string& key, int device) const;
  // Result types of `node`, from the cache or by lowering alone (no compile).
  std::vector<hlo::TensorType> ResultTypes(const Node& node);
  // The same when the caller already has the node's Signature.
  std::vector<hlo::TensorType> ResultTypes(const Node& node, const std::string& signature);

  // The persistent tiers (either may be null: off) and the key context
  // (plugin identity, versions, settings) of their entries.
  void ConfigureDisk(std::unique_ptr<DiskTier> programs, std::unique_ptr<DiskTier> executables,
                     CacheContext context);
  const CacheContext& context() const { return context_; }
  void SetWarmupDone(bool done);
  void SetUnexpectedCompileHook(UnexpectedCompileHook hook);
  CompileCounters Counters() const;

  std::vector<CacheStats> Stats() const;
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }
  void Clear();

  const std::shared_ptr<pjrt::Client>& client() const { return client_; }

 private:
  std::shared_ptr<pjrt::Client> client_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<CacheEntry>> entries_;
  int64_t memory_limit_ = 0;
  uint64_t uses_ = 0;
  int64_t evictions_ = 0;
  int64_t mapping_budget_ = -1;  // resolved on first use: see SetMappingBudget
  size_t mapping_floor_ = kMappingFloor;
  int compiles_since_mapping_check_ = 0;
  // Drops least recently used entries until at most `target` remain, never
  // `keep`. Called with mu_ held.
  void EvictDownTo(size_t target, const CacheEntry* keep);
  // The two bounds after an insertion (or a new limit). Called with mu_ held.
  void EvictPastLimit(const CacheEntry* keep);
  void RelieveMappingPressure(const CacheEntry* keep);
  // Result types by node signature; with the program tier on, the whole
  // program (so the compile that usually follows needs no second lowering).
  struct Known {
    Program program;
    bool from_disk = false;
  };
  std::unordered_map<std::string, Known> types_;
  int64_t hits_ = 0;
  int64_t misses_ = 0;

  // Fills entry's program and executable: executable tier, else program tier
  // or lowering, then compile. Called with mu_ held.
  void Build(CacheEntry& entry, const std::string& sig, int device, const std::function<Program()>& lower);
  std::unique_ptr<DiskTier> programs_, executables_;
  CacheContext context_;
  int64_t lowerings_ = 0, compiles_ = 0, misses_after_warmup_ = 0;
  bool warmup_done_ = false;
  UnexpectedCompileHook hook_;
};

// Runs an entry's executable on its device; returns its results in program
// order and the completion event.
struct Launch {
  std::vector<std::unique_ptr<pjrt::Buffer>> results;
  std::unique_ptr<pjrt::Event> done;
};
// While profiling (`torchtpu profile`), Execute awaits each launch and adds
// its wall time to the entry: device time as the host sees it. Arguments at
// the indices in `non_donatable` are copied instead of donated where the
// program aliases them to a result (someone else still holds them).
Launch Execute(CacheEntry& entry, const std::vector<pjrt::Buffer*>& args,
               const std::vector<int64_t>& non_donatable = {});
void SetProfiling(bool on);
bool Profiling();

}  // namespace torchtpu::graph
