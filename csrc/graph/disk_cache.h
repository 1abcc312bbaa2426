// The two persistent tiers of the compile cache (DESIGN.md, "Compile cache";
// docs/architecture.md, "The persistent cache"):
//   programs    — lowered StableHLO text and result types: a hit skips lowering;
//   executables — PJRT-serialized executables and result types: a hit skips
//                 lowering and compiling.
// One file per entry, named by the SHA-256 of the entry's scope (program key
// bytes, device kind and count, compile options, settings). Each file carries
// its full key — scope and identity (plugin, StableHLO and torchtpu versions,
// host CPU features) — and a SHA-256 of its body, so a corrupt, truncated,
// stale or mismatched file is detected, counted, logged once, removed and
// recompiled, never loaded. Writes go to a temporary file in the same folder,
// are fsync'ed and renamed into place, so concurrent writers of one entry both
// succeed and readers never see half an entry. No torch includes.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/types.h"

namespace torchtpu::pjrt {
class Client;
}

namespace torchtpu::graph {

// Everything a compiled program depends on beyond its own key bytes.
struct CacheContext {
  std::string device_kind;
  int device_count = 0;
  std::string platform_name;
  std::string platform_version;
  std::string pjrt_api_version;
  std::string stablehlo_version;
  std::string xla_version;
  std::string host_cpu_features;  // CPU plugin only: code is generated for this host
  std::string torchtpu_version;
  std::string settings;           // the in_cache_key settings, "NAME=value\n" each (from Python)

  // The part of the key that names the file (what program for which devices).
  std::string Scope() const;
  // The part checked on load: an entry written under another identity is stale.
  std::string Identity() const;
};

// Reads the identity of `client`'s plugin (and the host CPU's features when
// it is the CPU plugin).
CacheContext ContextFor(const pjrt::Client& client, const std::string& torchtpu_version,
                        const std::string& settings);
// The sorted feature flags of the host CPU (/proc/cpuinfo "flags"), or the
// model name where there are none; empty when unknown.
std::string HostCpuFeatures();

struct EntryKey {
  std::string scope;
  std::string identity;
  std::string FileName() const;  // sha256(scope) in hex + ".ttc"
};
EntryKey ProgramKey(const CacheContext& ctx, std::string_view program_key);
EntryKey ExecutableKey(const CacheContext& ctx, std::string_view program_key,
                       std::string_view compile_options);

// Payloads: result types + StableHLO text, result types + serialized executable.
std::string EncodeTyped(const std::vector<hlo::TensorType>& types, std::string_view blob);
bool DecodeTyped(std::string_view payload, std::vector<hlo::TensorType>* types, std::string* blob);

struct DiskTierStats {
  int64_t hits = 0;
  int64_t misses = 0;
  int64_t writes = 0;
  int64_t corrupt = 0;        // bad magic, truncated, checksum or key mismatch, unusable payload
  int64_t stale = 0;          // another format, plugin, StableHLO or torchtpu version, or host
  int64_t evictions = 0;
  int64_t write_errors = 0;
  int64_t abandoned_temp = 0; // temporary files of writers that died, removed
  double hit_seconds = 0;     // serving hits: read, verify, decode (and deserialize, executables)
};

// One file, as the CLI lists and verifies it.
struct DiskEntryInfo {
  std::string file;         // base name
  std::string tier;         // "programs" / "executables" (from the header)
  std::string description;
  int64_t hits = 0;
  double compile_seconds = 0;
  double last_use = 0;      // mtime, seconds since the epoch
  int64_t bytes = 0;
  std::string identity;
  std::string problem;      // empty: the entry is intact
};

// The format of one file. Exposed for tests and the CLI. Little-endian:
//   "TTPUCACH" | u32 format version | u32 tier | u64 hits (advisory, updated
//   in place, outside the checksum) | u64 body length | SHA-256(tier, body) |
//   body = scope, identity, description (u64 length + bytes each),
//          f64 compile seconds, payload (u64 length + bytes).
struct ParsedEntry {
  uint32_t tier = 0;
  int64_t hits = 0;
  std::string scope, identity, description, payload;
  double compile_seconds = 0;
};
constexpr uint32_t kEntryFormatVersion = 1;
constexpr size_t kEntryHeaderBytes = 64;
constexpr size_t kEntryHitsOffset = 16;
std::string EncodeEntry(uint32_t tier, const EntryKey& key, std::string_view description,
                        double compile_seconds, std::string_view payload);
// False (with the reason in *problem) for a file that is not an intact entry
// of this format version.
bool ParseEntry(std::string_view bytes, ParsedEntry* out, std::string* problem);

class DiskTier {
 public:
  enum Kind : uint32_t { kPrograms = 0, kExecutables = 1 };
  // `max_bytes` <= 0: no limit. Creates `dir` if needed; removes temporary
  // files older than ten minutes (writers that died).
  DiskTier(std::string dir, Kind kind, int64_t max_bytes);

  // The payload stored under `key`, or nullopt. A bad entry is counted,
  // logged once per tier, removed, and reported as a miss.
  std::optional<std::string> Load(const EntryKey& key);
  // Writes atomically; errors (full disk, read-only folder) are counted and
  // logged once, never raised: the cache is an optimisation.
  void Store(const EntryKey& key, std::string_view description, double compile_seconds,
             std::string_view payload);
  // The caller found a loaded payload unusable (it does not decode, or the
  // plugin rejects it): counted as corrupt, removed.
  void Reject(const EntryKey& key, const std::string& why);

  // The compile cache adds the whole cost of serving a hit.
  void AddHitSeconds(double seconds);
  DiskTierStats stats() const;
  const std::string& dir() const { return dir_; }
  Kind kind() const { return kind_; }
  const char* name() const { return kind_ == kPrograms ? "programs" : "executables"; }

  // Every entry file in `dir`, checked (magic, length, checksum, format).
  static std::vector<DiskEntryInfo> Scan(const std::string& dir);
  static const char* KindName(uint32_t kind);

 private:
  void Bad(const std::string& path, const std::string& why, bool stale);
  void EvictIfNeeded(int64_t added);
  std::string dir_;
  Kind kind_;
  int64_t max_bytes_;
  mutable std::mutex mu_;
  DiskTierStats stats_;
  int64_t bytes_ = -1;  // estimated size of the folder; -1: not scanned yet
  bool logged_bad_ = false;
  bool logged_write_error_ = false;
};

}  // namespace torchtpu::graph
