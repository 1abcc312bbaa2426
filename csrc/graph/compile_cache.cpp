#include "graph/compile_cache.h"

#include <algorithm>
#include <atomic>

#include "graph/host_mappings.h"
#include "graph/signature.h"

namespace torchtpu::graph {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::atomic<bool> g_profiling{false};
std::mutex& ProfileMutex() {
  static std::mutex mu;
  return mu;
}

std::string DeviceKey(const std::string& sig, int device) {
  std::string key = sig;
  key.append(reinterpret_cast<const char*>(&device), sizeof device);
  return key;
}

}  // namespace

std::shared_ptr<CacheEntry> CompileCache::Get(const Node& node, int device) {
  return GetOrCompile(Signature(node), device, [&] { return node.Describe(); }, [&] { return LowerNode(node); });
}

std::shared_ptr<CacheEntry> CompileCache::GetOrCompile(const std::string& sig, int device,
                                                        const std::function<std::string()>& describe,
                                                        const std::function<Program()>& lower) {
  std::string key = DeviceKey(sig, device);
  std::unique_lock<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++hits_;
    ++it->second->hits;
    it->second->last_use = Now();
    it->second->use_order = ++uses_;
    return it->second;
  }
  if (warmup_done_) {
    ++misses_after_warmup_;
    if (hook_) {
      UnexpectedCompileHook hook = hook_;
      lock.unlock();
      hook(describe());  // may throw: nothing is compiled then
      lock.lock();
      it = entries_.find(key);
      if (it != entries_.end()) return it->second;
    }
  }
  ++misses_;
  auto entry = std::make_shared<CacheEntry>();
  entry->description = describe();
  entry->device = device;
  Build(*entry, sig, device, lower);
  entry->last_use = Now();
  entry->use_order = ++uses_;
  entries_.emplace(std::move(key), entry);
  EvictPastLimit(entry.get());
  if (++compiles_since_mapping_check_ >= kMappingCheckEvery) {
    compiles_since_mapping_check_ = 0;
    RelieveMappingPressure(entry.get());
  }
  return entry;
}

void CompileCache::SetMemoryLimit(int64_t programs) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_limit_ = programs < 0 ? 0 : programs;
  EvictPastLimit(nullptr);
}

void CompileCache::SetMappingBudget(int64_t budget, size_t floor) {
  std::lock_guard<std::mutex> lock(mu_);
  mapping_budget_ = budget;
  mapping_floor_ = floor;
}

void CompileCache::EvictDownTo(size_t target, const CacheEntry* keep) {
  if (entries_.size() <= target) return;
  std::vector<decltype(entries_)::iterator> order;
  order.reserve(entries_.size());
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->second.get() != keep) order.push_back(it);
  }
  const size_t drop = std::min(entries_.size() - target, order.size());
  std::nth_element(order.begin(), order.begin() + drop, order.end(),
                   [](const auto& a, const auto& b) { return a->second->use_order < b->second->use_order; });
  // Whoever still runs a dropped program holds its own reference.
  for (size_t i = 0; i < drop; ++i) entries_.erase(order[i]);
  evictions_ += static_cast<int64_t>(drop);
}

void CompileCache::EvictPastLimit(const CacheEntry* keep) {
  if (memory_limit_ > 0) EvictDownTo(static_cast<size_t>(memory_limit_), keep);
}

void CompileCache::RelieveMappingPressure(const CacheEntry* keep) {
  if (mapping_budget_ < 0) {
    const int64_t max = MaxHostMappings();
    mapping_budget_ = max > 0 ? max / 2 : 0;
  }
  if (mapping_budget_ == 0) return;
  // Dropping an executable unmaps its code at once (unless a captured graph
  // or a running launch still holds it); a few halvings at most, and none
  // more once one frees nothing (the mappings are someone else's).
  int64_t mappings = CountHostMappings();
  for (int round = 0; round < 8 && entries_.size() > mapping_floor_; ++round) {
    if (mappings < 0 || mappings <= mapping_budget_) return;
    EvictDownTo(std::max(entries_.size() / 2, mapping_floor_), keep);
    const int64_t after = CountHostMappings();
    if (after >= mappings) return;
    mappings = after;
  }
}

void CompileCache::Build(CacheEntry& entry, const std::string& sig, int device,
                         const std::function<Program()>& lower) {
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  pjrt::CompileOptions options;
  options.device_assignment = {client_->device_id(client_->devices().at(device))};
  EntryKey exe_key;
  if (executables_) {
    exe_key = ExecutableKey(context_, sig, options.Serialize());
    if (std::optional<std::string> payload = executables_->Load(exe_key)) {
      std::string blob;
      if (!DecodeTyped(*payload, &entry.program.result_types, &blob)) {
        executables_->Reject(exe_key, "its payload does not decode");
      } else {
        try {
          entry.executable = client_->Deserialize(blob);
        } catch (const pjrt::Error& e) {
          executables_->Reject(exe_key, std::string("the plugin cannot load it (") + e.what() + ")");
        }
      }
      if (entry.executable) {
        entry.compile_seconds = elapsed();
        executables_->AddHitSeconds(entry.compile_seconds);
        entry.source = "executables";
        return;
      }
      entry.program = Program();
    }
  }
  bool have_program = false;
  auto known = types_.find(sig);
  if (known != types_.end() && !known->second.program.text.empty()) {
    entry.program = known->second.program;
    have_program = true;
    if (known->second.from_disk) entry.source = "programs";
  }
  EntryKey program_key;
  if (!have_program && programs_) {
    program_key = ProgramKey(context_, sig);
    if (std::optional<std::string> payload = programs_->Load(program_key)) {
      if (DecodeTyped(*payload, &entry.program.result_types, &entry.program.text)) {
        have_program = true;
        entry.source = "programs";
        programs_->AddHitSeconds(elapsed());
      } else {
        programs_->Reject(program_key, "its payload does not decode");
        entry.program = Program();
      }
    }
  }
  if (!have_program) {
    entry.program = lower();
    ++lowerings_;
    if (programs_) {
      programs_->Store(program_key, entry.description, elapsed(),
                       EncodeTyped(entry.program.result_types, entry.program.text));
    }
  }
  try {
    entry.executable = client_->Compile(entry.program.text, options);
  } catch (const pjrt::Error& e) {
    throw LoweringError("torchtpu: cannot compile " + entry.description + ": " + e.what(),
                        e.code() == pjrt::ErrorCode::kResourceExhausted);
  }
  ++compiles_;
  entry.compile_seconds = elapsed();
  if (executables_) {
    std::string blob;
    try {
      blob = entry.executable->Serialize();
    } catch (const pjrt::Error&) {
      // A plugin that cannot serialize keeps its programs in memory only;
      // the compiled executable in hand is still good.
    }
    if (!blob.empty()) {
      executables_->Store(exe_key, entry.description, entry.compile_seconds,
                          EncodeTyped(entry.program.result_types, blob));
    }
  }
}

std::vector<hlo::TensorType> CompileCache::ResultTypes(const Node& node) {
  return ResultTypes(node, Signature(node));
}

std::vector<hlo::TensorType> CompileCache::ResultTypes(const Node& node, const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = types_.find(key);
    if (it != types_.end()) return it->second.program.result_types;
  }
  Program program;
  bool loaded = false;
  EntryKey program_key;
  if (programs_) {
    auto start = std::chrono::steady_clock::now();
    program_key = ProgramKey(context_, key);
    if (std::optional<std::string> payload = programs_->Load(program_key)) {
      loaded = DecodeTyped(*payload, &program.result_types, &program.text);
      if (loaded) {
        programs_->AddHitSeconds(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      }
      if (!loaded) {
        programs_->Reject(program_key, "its payload does not decode");
        program = Program();
      }
    }
  }
  if (!loaded) {
    program = LowerNode(node);
    if (programs_) programs_->Store(program_key, node.Describe(), 0, EncodeTyped(program.result_types, program.text));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!loaded) ++lowerings_;
  // Without the program tier only the types are kept (the text would be
  // lowered again on a compile, as before the tiers existed).
  if (!programs_) program.text.clear();
  std::vector<hlo::TensorType> types = program.result_types;
  types_.emplace(key, Known{std::move(program), loaded});
  return types;
}

void CompileCache::ConfigureDisk(std::unique_ptr<DiskTier> programs, std::unique_ptr<DiskTier> executables,
                                 CacheContext context) {
  std::lock_guard<std::mutex> lock(mu_);
  programs_ = std::move(programs);
  executables_ = std::move(executables);
  context_ = std::move(context);
}

void CompileCache::SetWarmupDone(bool done) {
  std::lock_guard<std::mutex> lock(mu_);
  warmup_done_ = done;
}

void CompileCache::SetUnexpectedCompileHook(UnexpectedCompileHook hook) {
  std::lock_guard<std::mutex> lock(mu_);
  hook_ = std::move(hook);
}

CompileCounters CompileCache::Counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  CompileCounters c;
  c.memory_hits = hits_;
  c.memory_misses = misses_;
  c.memory_evictions = evictions_;
  c.memory_programs = static_cast<int64_t>(entries_.size());
  c.memory_limit = memory_limit_;
  c.mapping_budget = mapping_budget_ < 0 ? 0 : mapping_budget_;
  c.lowerings = lowerings_;
  c.compiles = compiles_;
  c.misses_after_warmup = misses_after_warmup_;
  c.warmup_done = warmup_done_;
  c.programs_on = programs_ != nullptr;
  c.executables_on = executables_ != nullptr;
  if (programs_) { c.programs = programs_->stats(); c.programs_dir = programs_->dir(); }
  if (executables_) { c.executables = executables_->stats(); c.executables_dir = executables_->dir(); }
  return c;
}

std::vector<CacheStats> CompileCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CacheStats> rows;
  for (const auto& [key, e] : entries_) {
    std::lock_guard<std::mutex> profile_lock(ProfileMutex());
    rows.push_back({e->description, e->device, e->hits, e->compile_seconds, e->last_use, e->source,
                    e->calls, e->device_seconds});
  }
  return rows;
}

bool CompileCache::Holds(const std::string& key, int device) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(DeviceKey(key, device)) > 0;
}

void CompileCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  types_.clear();
  hits_ = misses_ = evictions_ = 0;
  lowerings_ = compiles_ = misses_after_warmup_ = 0;
}

void SetProfiling(bool on) { g_profiling.store(on); }
bool Profiling() { return g_profiling.load(std::memory_order_relaxed); }

Launch Execute(CacheEntry& entry, const std::vector<pjrt::Buffer*>& args,
               const std::vector<int64_t>& non_donatable) {
  bool profiling = Profiling();
  auto start = std::chrono::steady_clock::now();
  pjrt::ExecuteResult r = entry.executable->Execute({args}, non_donatable);
  Launch launch;
  launch.results = std::move(r.outputs.at(0));
  if (!r.done.empty()) launch.done = std::move(r.done[0]);
  if (profiling) {
    if (launch.done) launch.done->Await();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(ProfileMutex());
    ++entry.calls;
    entry.device_seconds += seconds;
  }
  return launch;
}

}  // namespace torchtpu::graph
