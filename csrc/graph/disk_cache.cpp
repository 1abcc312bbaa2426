#include "graph/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "graph/sha256.h"
#include "pjrt/pjrt.h"

namespace torchtpu::graph {
namespace {

constexpr char kMagic[8] = {'T', 'T', 'P', 'U', 'C', 'A', 'C', 'H'};
constexpr double kAbandonedTempSeconds = 600;

void PutU32(std::string& s, uint32_t v) { s.append(reinterpret_cast<const char*>(&v), 4); }
void PutU64(std::string& s, uint64_t v) { s.append(reinterpret_cast<const char*>(&v), 8); }
void PutStr(std::string& s, std::string_view v) { PutU64(s, v.size()); s.append(v); }

// A bounds-checked reader over a byte string.
struct Reader {
  std::string_view data;
  size_t pos = 0;
  bool ok = true;
  template <typename T>
  T Get() {
    T v{};
    if (!ok || data.size() - pos < sizeof(T)) { ok = false; return v; }
    std::memcpy(&v, data.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  std::string Str() {
    uint64_t n = Get<uint64_t>();
    if (!ok || data.size() - pos < n) { ok = false; return {}; }
    std::string s(data.substr(pos, n));
    pos += n;
    return s;
  }
};

bool IsTempName(const std::string& name) { return name.rfind(".tmp-", 0) == 0; }
bool IsEntryName(const std::string& name) {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".ttc") == 0 && name[0] != '.';
}

double MtimeOf(const struct stat& st) { return st.st_mtim.tv_sec + st.st_mtim.tv_nsec * 1e-9; }

double NowSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

void MakeDirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') ::mkdir(dir.substr(0, i).c_str(), 0755);
  }
}

}  // namespace

std::string CacheContext::Scope() const {
  std::ostringstream s;
  s << "device_kind=" << device_kind << "\ndevice_count=" << device_count << "\nsettings:\n" << settings;
  return s.str();
}

std::string CacheContext::Identity() const {
  std::ostringstream s;
  s << "format=" << kEntryFormatVersion << "\nplatform=" << platform_name << "\nplatform_version="
    << platform_version << "\npjrt_api=" << pjrt_api_version << "\nstablehlo=" << stablehlo_version
    << "\nxla=" << xla_version << "\ntorchtpu=" << torchtpu_version
    << "\nhost_cpu=" << Sha256Hex(host_cpu_features).substr(0, 16) << "\n";
  return s.str();
}

std::string HostCpuFeatures() {
  std::string text;
  if (!ReadFile("/proc/cpuinfo", &text)) return "";
  std::string model, flags;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, line.find_first_of(" \t"));
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (flags.empty() && (name == "flags" || name == "Features")) flags = value;
    if (model.empty() && name == "model") model = value;
  }
  if (flags.empty()) return model;
  std::vector<std::string> words;
  std::istringstream ws(flags);
  for (std::string w; ws >> w;) words.push_back(w);
  std::sort(words.begin(), words.end());
  std::string out;
  for (auto& w : words) { out += w; out += ' '; }
  return out;
}

CacheContext ContextFor(const pjrt::Client& client, const std::string& torchtpu_version,
                        const std::string& settings) {
  CacheContext c;
  c.device_count = static_cast<int>(client.devices().size());
  if (!client.devices().empty()) c.device_kind = client.device_kind(client.devices()[0]);
  c.platform_name = client.platform_name();
  c.platform_version = client.platform_version();
  c.pjrt_api_version =
      std::to_string(client.plugin()->api_major()) + "." + std::to_string(client.plugin()->api_minor());
  auto attrs = client.plugin()->Attributes();
  c.stablehlo_version = attrs["stablehlo_current_version"];
  c.xla_version = attrs["xla_version"];
  if (c.platform_name == "cpu") c.host_cpu_features = HostCpuFeatures();
  c.torchtpu_version = torchtpu_version;
  c.settings = settings;
  return c;
}

std::string EntryKey::FileName() const { return Sha256Hex(scope) + ".ttc"; }

EntryKey ProgramKey(const CacheContext& ctx, std::string_view program_key) {
  EntryKey k;
  k.scope = "tier=programs\n" + ctx.Scope() + "key:";
  PutStr(k.scope, program_key);
  k.identity = ctx.Identity();
  return k;
}

EntryKey ExecutableKey(const CacheContext& ctx, std::string_view program_key,
                       std::string_view compile_options) {
  EntryKey k;
  k.scope = "tier=executables\n" + ctx.Scope() + "compile_options:";
  PutStr(k.scope, compile_options);
  k.scope += "key:";
  PutStr(k.scope, program_key);
  k.identity = ctx.Identity();
  return k;
}

std::string EncodeTyped(const std::vector<hlo::TensorType>& types, std::string_view blob) {
  std::string s;
  PutU32(s, static_cast<uint32_t>(types.size()));
  for (const auto& t : types) {
    s.push_back(static_cast<char>(t.dtype));
    PutU32(s, static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) PutU64(s, static_cast<uint64_t>(d));
  }
  PutStr(s, blob);
  return s;
}

bool DecodeTyped(std::string_view payload, std::vector<hlo::TensorType>* types, std::string* blob) {
  Reader r{payload};
  uint32_t n = r.Get<uint32_t>();
  if (!r.ok || n > payload.size()) return false;
  types->clear();
  for (uint32_t i = 0; i < n && r.ok; ++i) {
    hlo::TensorType t;
    uint8_t dtype = r.Get<uint8_t>();
    if (dtype > static_cast<uint8_t>(hlo::kLastDType)) return false;
    t.dtype = static_cast<hlo::DType>(dtype);
    uint32_t rank = r.Get<uint32_t>();
    if (!r.ok || rank > payload.size()) return false;
    for (uint32_t d = 0; d < rank && r.ok; ++d) t.shape.push_back(static_cast<int64_t>(r.Get<uint64_t>()));
    types->push_back(std::move(t));
  }
  *blob = r.Str();
  return r.ok && r.pos == payload.size();
}

std::string EncodeEntry(uint32_t tier, const EntryKey& key, std::string_view description,
                        double compile_seconds, std::string_view payload) {
  std::string body;
  PutStr(body, key.scope);
  PutStr(body, key.identity);
  PutStr(body, description);
  body.append(reinterpret_cast<const char*>(&compile_seconds), sizeof compile_seconds);
  PutStr(body, payload);
  std::string out(kMagic, sizeof kMagic);
  PutU32(out, kEntryFormatVersion);
  PutU32(out, tier);
  PutU64(out, 0);  // hits: advisory, updated in place, outside the checksum
  PutU64(out, body.size());
  out += Sha256Bytes(std::string(reinterpret_cast<const char*>(&tier), 4) + body);
  out += body;
  return out;
}

bool ParseEntry(std::string_view bytes, ParsedEntry* out, std::string* problem) {
  if (bytes.size() < kEntryHeaderBytes) { *problem = "truncated header"; return false; }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) { *problem = "bad magic"; return false; }
  Reader h{bytes.substr(8, kEntryHeaderBytes - 8 - 32)};
  uint32_t version = h.Get<uint32_t>();
  out->tier = h.Get<uint32_t>();
  out->hits = static_cast<int64_t>(h.Get<uint64_t>());
  uint64_t body_len = h.Get<uint64_t>();
  if (version != kEntryFormatVersion) {
    *problem = "stale: format version " + std::to_string(version);
    return false;
  }
  if (body_len != bytes.size() - kEntryHeaderBytes) {
    *problem = body_len > bytes.size() - kEntryHeaderBytes ? "truncated" : "trailing bytes";
    return false;
  }
  std::string_view body = bytes.substr(kEntryHeaderBytes);
  if (Sha256Bytes(std::string(reinterpret_cast<const char*>(&out->tier), 4) + std::string(body)) !=
      bytes.substr(kEntryHeaderBytes - 32, 32)) {
    *problem = "checksum mismatch";
    return false;
  }
  Reader r{body};
  out->scope = r.Str();
  out->identity = r.Str();
  out->description = r.Str();
  out->compile_seconds = r.Get<double>();
  out->payload = r.Str();
  if (!r.ok || r.pos != body.size()) { *problem = "malformed body"; return false; }
  return true;
}

DiskTier::DiskTier(std::string dir, Kind kind, int64_t max_bytes)
    : dir_(std::move(dir)), kind_(kind), max_bytes_(max_bytes) {
  while (dir_.size() > 1 && dir_.back() == '/') dir_.pop_back();
  MakeDirs(dir_);
  double now = NowSeconds();
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (!IsTempName(name)) continue;
      struct stat st;
      std::string path = dir_ + "/" + name;
      if (::stat(path.c_str(), &st) == 0 && now - MtimeOf(st) > kAbandonedTempSeconds &&
          ::unlink(path.c_str()) == 0) {
        ++stats_.abandoned_temp;
      }
    }
    ::closedir(d);
  }
}

const char* DiskTier::KindName(uint32_t kind) {
  return kind == kPrograms ? "programs" : kind == kExecutables ? "executables" : "unknown";
}

void DiskTier::Bad(const std::string& path, const std::string& why, bool stale) {
  ::unlink(path.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  ++(stale ? stats_.stale : stats_.corrupt);
  if (!logged_bad_) {
    logged_bad_ = true;
    std::fprintf(stderr,
                 "torchtpu: %s cache entry %s is %s; recompiling and rewriting it "
                 "(further bad entries of this tier are counted in compile_cache_stats(), not logged)\n",
                 name(), path.c_str(), why.c_str());
  }
}

std::optional<std::string> DiskTier::Load(const EntryKey& key) {
  std::string path = dir_ + "/" + key.FileName();
  int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
    return std::nullopt;
  }
  std::string bytes;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) {
    bytes.resize(static_cast<size_t>(st.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    bytes.resize(got);
  }
  ParsedEntry e;
  std::string problem;
  bool ok = ParseEntry(bytes, &e, &problem);
  if (ok && e.tier != kind_) { ok = false; problem = "an entry of another tier"; }
  if (ok && e.scope != key.scope) { ok = false; problem = "mismatched key"; }
  bool stale = problem.rfind("stale", 0) == 0;
  if (ok && e.identity != key.identity) {
    ok = false;
    stale = true;
    problem = "stale (written by another plugin, torchtpu version or host)";
  }
  if (!ok) {
    ::close(fd);
    Bad(path, problem, stale);
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
    return std::nullopt;
  }
  // Last use (for LRU eviction) is the mtime; hits are advisory.
  int64_t hits = e.hits + 1;
  (void)!::pwrite(fd, &hits, sizeof hits, kEntryHitsOffset);
  ::futimens(fd, nullptr);
  ::close(fd);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.hits;
  return std::move(e.payload);
}

void DiskTier::Reject(const EntryKey& key, const std::string& why) {
  Bad(dir_ + "/" + key.FileName(), why, false);
}

void DiskTier::Store(const EntryKey& key, std::string_view description, double compile_seconds,
                     std::string_view payload) {
  static std::atomic<uint64_t> counter{0};
  std::string bytes = EncodeEntry(kind_, key, description, compile_seconds, payload);
  std::string file = key.FileName();
  std::string tmp = dir_ + "/.tmp-" + file + "-" + std::to_string(::getpid()) + "-" +
                    std::to_string(counter.fetch_add(1));
  auto fail = [&](const char* what) {
    int err = errno;
    ::unlink(tmp.c_str());
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.write_errors;
    if (!logged_write_error_) {
      logged_write_error_ = true;
      std::fprintf(stderr, "torchtpu: cannot write the %s cache in %s (%s: %s); continuing without saving\n",
                   name(), dir_.c_str(), what, std::strerror(err));
    }
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    MakeDirs(dir_);  // the folder may have been removed (torchtpu cache clear)
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  }
  if (fd < 0) return fail("open");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) { ::close(fd); return fail("write"); }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) { ::close(fd); return fail("fsync"); }
  ::close(fd);
  if (::rename(tmp.c_str(), (dir_ + "/" + file).c_str()) != 0) return fail("rename");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.writes;
  }
  EvictIfNeeded(static_cast<int64_t>(bytes.size()));
}

void DiskTier::EvictIfNeeded(int64_t added) {
  if (max_bytes_ <= 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes_ >= 0) {
    bytes_ += added;
    if (bytes_ <= max_bytes_) return;
  }
  // Rescan: other processes write here too.
  struct File { double mtime; int64_t size; std::string path; };
  std::vector<File> files;
  int64_t total = 0;
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (!IsEntryName(n)) continue;
      struct stat st;
      std::string path = dir_ + "/" + n;
      if (::stat(path.c_str(), &st) != 0) continue;
      files.push_back({MtimeOf(st), static_cast<int64_t>(st.st_size), path});
      total += st.st_size;
    }
    ::closedir(d);
  }
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) { return a.mtime < b.mtime; });
  for (const File& f : files) {
    if (total <= max_bytes_) break;
    if (::unlink(f.path.c_str()) == 0) ++stats_.evictions;
    total -= f.size;
  }
  bytes_ = total;
}

void DiskTier::AddHitSeconds(double seconds) {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.hit_seconds += seconds;
}

DiskTierStats DiskTier::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

std::vector<DiskEntryInfo> DiskTier::Scan(const std::string& dir) {
  std::vector<DiskEntryInfo> rows;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return rows;
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (IsEntryName(n) || IsTempName(n)) names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    DiskEntryInfo info;
    info.file = n;
    std::string path = dir + "/" + n;
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) continue;
    info.bytes = st.st_size;
    info.last_use = MtimeOf(st);
    if (IsTempName(n)) {
      info.problem = "temporary file (a write in progress, or of a writer that died)";
      rows.push_back(std::move(info));
      continue;
    }
    std::string bytes;
    ParsedEntry e;
    if (!ReadFile(path, &bytes)) {
      info.problem = "unreadable";
    } else if (ParseEntry(bytes, &e, &info.problem)) {
      info.tier = KindName(e.tier);
      info.description = e.description;
      info.hits = e.hits;
      info.compile_seconds = e.compile_seconds;
      info.identity = e.identity;
      if (n != Sha256Hex(e.scope) + ".ttc") info.problem = "mismatched key (file name)";
    }
    rows.push_back(std::move(info));
  }
  return rows;
}

}  // namespace torchtpu::graph
