#include "graph/compile_cache.h"

#include "graph/signature.h"

namespace torchtpu::graph {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string DeviceKey(const std::string& sig, int device) {
  std::string key = sig;
  key.append(reinterpret_cast<const char*>(&device), sizeof device);
  return key;
}

}  // namespace

CacheEntry& CompileCache::Get(const Node& node, int device) {
  return GetOrCompile(Signature(node), device, [&] { return node.Describe(); }, [&] { return LowerNode(node); });
}

CacheEntry& CompileCache::GetOrCompile(const std::string& sig, int device,
                                       const std::function<std::string()>& describe,
                                       const std::function<Program()>& lower) {
  std::string key = DeviceKey(sig, device);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++hits_;
    ++it->second->hits;
    it->second->last_use = Now();
    return *it->second;
  }
  ++misses_;
  auto entry = std::make_unique<CacheEntry>();
  entry->description = describe();
  entry->device = device;
  auto start = std::chrono::steady_clock::now();
  entry->program = lower();
  pjrt::CompileOptions options;
  options.device_assignment = {client_->device_id(client_->devices().at(device))};
  try {
    entry->executable = client_->Compile(entry->program.text, options);
  } catch (const pjrt::Error& e) {
    throw LoweringError("torchtpu: cannot compile " + entry->description + ": " + e.what(),
                        e.code() == pjrt::ErrorCode::kResourceExhausted);
  }
  entry->compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  entry->last_use = Now();
  CacheEntry& ref = *entry;
  entries_.emplace(std::move(key), std::move(entry));
  return ref;
}

std::vector<hlo::TensorType> CompileCache::ResultTypes(const Node& node) {
  return ResultTypes(node, Signature(node));
}

std::vector<hlo::TensorType> CompileCache::ResultTypes(const Node& node, const std::string& key) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = types_.find(key);
    if (it != types_.end()) return it->second;
  }
  std::vector<hlo::TensorType> types = LowerNode(node).result_types;
  std::lock_guard<std::mutex> lock(mu_);
  types_.emplace(key, types);
  return types;
}

std::vector<CacheStats> CompileCache::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<CacheStats> rows;
  for (const auto& [key, e] : entries_) {
    rows.push_back({e->description, e->device, e->hits, e->compile_seconds, e->last_use});
  }
  return rows;
}

void CompileCache::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  entries_.clear();
  types_.clear();
  hits_ = misses_ = 0;
}

Launch Execute(CacheEntry& entry, const std::vector<pjrt::Buffer*>& args) {
  pjrt::ExecuteResult r = entry.executable->Execute({args});
  Launch launch;
  launch.results = std::move(r.outputs.at(0));
  if (!r.done.empty()) launch.done = std::move(r.done[0]);
  return launch;
}

}  // namespace torchtpu::graph
