// graph/: the persistent compile-cache tiers against the real CPU plugin —
// SHA-256, the key, hits in a fresh cache (standing in for a new process),
// each tier alone, corrupt / truncated / stale entries, abandoned temporary
// files, concurrent writers, LRU eviction and the unexpected-compile hook.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "graph/compile_cache.h"
#include "graph/disk_cache.h"
#include "graph/lowering.h"
#include "graph/sha256.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;
namespace fs = std::filesystem;

namespace {

REGISTER_LOWERING("disk_test.double", [](hlo::Builder& b, const graph::Node&, const std::vector<hlo::Value>& in) {
  return std::vector<hlo::Value>{b.Add(in[0], in[0])};
});

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/torchtpu_disk_cache_XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string sub(const std::string& name) const { return path + "/" + name; }
};

graph::Node Doubler(int64_t n) {
  graph::Node node;
  node.op = "disk_test.double";
  node.args = {hlo::TensorType{DType::kF32, {n}}};
  node.inputs = {graph::Input{0, std::nullopt}};
  return node;
}

graph::CacheContext Context(const std::string& version = "0.1.0", const std::string& settings = "A=1\n") {
  return graph::ContextFor(*testing_plugin::Client(), version, settings);
}

// A fresh in-memory cache over the given folders ("" = tier off), as a new
// process would have.
std::unique_ptr<graph::CompileCache> Fresh(const std::string& programs, const std::string& executables,
                                           graph::CacheContext ctx = Context(), int64_t max_bytes = 0) {
  auto cache = std::make_unique<graph::CompileCache>(testing_plugin::Client());
  std::unique_ptr<graph::DiskTier> p, e;
  if (!programs.empty()) p = std::make_unique<graph::DiskTier>(programs, graph::DiskTier::kPrograms, max_bytes);
  if (!executables.empty()) {
    e = std::make_unique<graph::DiskTier>(executables, graph::DiskTier::kExecutables, max_bytes);
  }
  cache->ConfigureDisk(std::move(p), std::move(e), std::move(ctx));
  return cache;
}

// Runs the doubler through `cache` and checks the result.
void ExpectDoubles(graph::CompileCache& cache, int64_t n = 4) {
  graph::Node node = Doubler(n);
  EXPECT_EQ(cache.ResultTypes(node).at(0).shape, (hlo::Shape{n}));
  std::shared_ptr<graph::CacheEntry> entry = cache.Get(node, 0);
  auto c = testing_plugin::Client();
  std::vector<float> data(n);
  for (int64_t i = 0; i < n; ++i) data[i] = static_cast<float>(i + 1);
  auto buf = c->BufferFromHost(data.data(), pjrt::ElementType::kF32, {n}, c->devices()[0]);
  auto launch = graph::Execute(*entry, {buf.get()});
  std::vector<float> out(n);
  launch.results.at(0)->ToHost(out.data(), n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(out[i], 2 * data[i]);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  for (auto& e : fs::directory_iterator(dir)) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << bytes;
}

}  // namespace

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(graph::Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(graph::Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(graph::Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  EXPECT_EQ(graph::Sha256Hex(million), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Streaming in odd pieces gives the same digest.
  graph::Sha256 h;
  for (size_t i = 0; i < million.size(); i += 777) h.Update(std::string_view(million).substr(i, 777));
  auto d = h.Digest();
  EXPECT_EQ(graph::ToHex(std::string(reinterpret_cast<const char*>(d.data()), 32)), graph::Sha256Hex(million));
}

TEST(DiskCacheKey, EveryPartOfTheContextChangesTheKey) {
  graph::CacheContext base = Context();
  EXPECT_FALSE(base.platform_name.empty());
  EXPECT_FALSE(base.stablehlo_version.empty());
  EXPECT_FALSE(base.host_cpu_features.empty());  // the CPU plugin: code depends on the host
  auto full = [](const graph::EntryKey& k) { return k.FileName() + k.identity; };
  std::string ref = full(graph::ProgramKey(base, "sig"));
  std::vector<std::function<void(graph::CacheContext&)>> flips = {
      [](auto& c) { c.device_kind += "x"; },       [](auto& c) { c.device_count += 1; },
      [](auto& c) { c.platform_name += "x"; },     [](auto& c) { c.platform_version += "x"; },
      [](auto& c) { c.pjrt_api_version += "x"; },  [](auto& c) { c.stablehlo_version += "x"; },
      [](auto& c) { c.xla_version += "x"; },       [](auto& c) { c.host_cpu_features += "avx9"; },
      [](auto& c) { c.torchtpu_version += "x"; },  [](auto& c) { c.settings = "A=2\n"; },
  };
  for (size_t i = 0; i < flips.size(); ++i) {
    graph::CacheContext c = base;
    flips[i](c);
    EXPECT_NE(full(graph::ProgramKey(c, "sig")), ref) << "flip " << i;
  }
  EXPECT_NE(full(graph::ProgramKey(base, "sig2")), ref);
  // Settings and devices name the file (a flip is a different entry); versions
  // are the identity (a flip makes the existing entry stale).
  graph::CacheContext s = base;
  s.settings = "A=2\n";
  EXPECT_NE(graph::ProgramKey(s, "sig").FileName(), graph::ProgramKey(base, "sig").FileName());
  graph::CacheContext v = base;
  v.torchtpu_version = "9.9";
  EXPECT_EQ(graph::ProgramKey(v, "sig").FileName(), graph::ProgramKey(base, "sig").FileName());
  EXPECT_NE(graph::ProgramKey(v, "sig").identity, graph::ProgramKey(base, "sig").identity);
  // Executables also depend on the compile options (the target device).
  EXPECT_NE(graph::ExecutableKey(base, "sig", "a").FileName(), graph::ExecutableKey(base, "sig", "b").FileName());
  EXPECT_NE(graph::ExecutableKey(base, "sig", "a").FileName(), graph::ProgramKey(base, "sig").FileName());
}

TEST(DiskCache, EntryRoundTripsAndDetectsDamage) {
  graph::EntryKey key{"scope", "identity"};
  std::string bytes = graph::EncodeEntry(1, key, "desc", 0.5, "payload");
  graph::ParsedEntry e;
  std::string problem;
  ASSERT_TRUE(graph::ParseEntry(bytes, &e, &problem)) << problem;
  EXPECT_EQ(e.scope, "scope");
  EXPECT_EQ(e.identity, "identity");
  EXPECT_EQ(e.description, "desc");
  EXPECT_EQ(e.payload, "payload");
  EXPECT_EQ(e.compile_seconds, 0.5);
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (i >= graph::kEntryHitsOffset && i < graph::kEntryHitsOffset + 8) continue;  // advisory
    std::string bad = bytes;
    bad[i] ^= 0x40;
    EXPECT_FALSE(graph::ParseEntry(bad, &e, &problem)) << "flipped byte " << i;
  }
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(graph::ParseEntry(bytes.substr(0, n), &e, &problem)) << "truncated to " << n;
  }
  std::vector<hlo::TensorType> types = {{DType::kBF16, {2, 3}}, {DType::kI64, {}}}, back;
  std::string blob;
  ASSERT_TRUE(graph::DecodeTyped(graph::EncodeTyped(types, "xyz"), &back, &blob));
  EXPECT_EQ(back, types);
  EXPECT_EQ(blob, "xyz");
  EXPECT_FALSE(graph::DecodeTyped("\x05", &back, &blob));
}

TEST(DiskCache, AFreshCacheHitsBothTiersAndCompilesNothing) {
  TempDir t;
  {
    auto first = Fresh(t.sub("p"), t.sub("e"));
    ExpectDoubles(*first);
    auto c = first->Counters();
    EXPECT_EQ(c.compiles, 1);
    EXPECT_EQ(c.lowerings, 1);
    EXPECT_EQ(c.programs.writes, 1);
    EXPECT_EQ(c.executables.writes, 1);
  }
  auto second = Fresh(t.sub("p"), t.sub("e"));
  ExpectDoubles(*second);
  auto c = second->Counters();
  EXPECT_EQ(c.compiles, 0);
  EXPECT_EQ(c.lowerings, 0);
  EXPECT_EQ(c.executables.hits, 1);
  EXPECT_EQ(c.programs.hits, 1);  // the result types, read before the launch
  EXPECT_EQ(second->Stats().at(0).source, "executables");
  // Hits are recorded in the entry (advisory) for `torchtpu cache list`.
  auto rows = graph::DiskTier::Scan(t.sub("e"));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].problem, "");
  EXPECT_EQ(rows[0].hits, 1);
  EXPECT_EQ(rows[0].description, "disk_test.double(f32[4])");
  EXPECT_EQ(rows[0].tier, "executables");
}

TEST(DiskCache, EachTierWorksAlone) {
  TempDir t;
  Fresh(t.sub("p"), "")->Get(Doubler(4), 0);
  auto programs_only = Fresh(t.sub("p"), "");
  ExpectDoubles(*programs_only);
  EXPECT_EQ(programs_only->Counters().lowerings, 0);
  EXPECT_EQ(programs_only->Counters().compiles, 1);
  EXPECT_EQ(programs_only->Stats().at(0).source, "programs");

  Fresh("", t.sub("e"))->Get(Doubler(4), 0);
  auto executables_only = Fresh("", t.sub("e"));
  ExpectDoubles(*executables_only);
  EXPECT_EQ(executables_only->Counters().compiles, 0);
  EXPECT_EQ(executables_only->Counters().executables.hits, 1);
  EXPECT_FALSE(executables_only->Counters().programs_on);
}

TEST(DiskCache, ExecutablesAreKeyedByDevice) {
  TempDir t;
  Fresh("", t.sub("e"))->Get(Doubler(4), 0);
  auto fresh = Fresh("", t.sub("e"));
  fresh->Get(Doubler(4), 1);
  EXPECT_EQ(fresh->Counters().compiles, 1);
  EXPECT_EQ(fresh->Counters().executables.misses, 1);
}

// Damage every entry file of `dir` with `damage`, then check that a fresh
// cache detects it (counter), recompiles, rewrites and still computes right.
void ExpectRecovers(const std::function<void(const std::string&)>& damage, bool stale,
                    graph::CacheContext reader = Context()) {
  TempDir t;
  Fresh(t.sub("p"), t.sub("e"))->Get(Doubler(4), 0);
  for (const auto& dir : {t.sub("p"), t.sub("e")}) {
    for (const auto& f : Entries(dir)) damage(f);
  }
  auto cache = Fresh(t.sub("p"), t.sub("e"), reader);
  ExpectDoubles(*cache);
  auto c = cache->Counters();
  EXPECT_EQ(c.compiles, 1);
  EXPECT_EQ(c.lowerings, 1);
  EXPECT_EQ(stale ? c.programs.stale : c.programs.corrupt, 1);
  EXPECT_EQ(stale ? c.executables.stale : c.executables.corrupt, 1);
  EXPECT_EQ(c.executables.hits + c.programs.hits, 0);
  // Rewritten: intact again, and the next cache hits.
  for (const auto& dir : {t.sub("p"), t.sub("e")}) {
    for (const auto& row : graph::DiskTier::Scan(dir)) EXPECT_EQ(row.problem, "") << row.file;
  }
  auto again = Fresh(t.sub("p"), t.sub("e"), reader);
  ExpectDoubles(*again);
  EXPECT_EQ(again->Counters().compiles, 0);
}

TEST(DiskCache, FlippedBytesAreDetectedAndRecompiled) {
  ExpectRecovers([](const std::string& f) {
    std::string b = Slurp(f);
    b[b.size() - 3] ^= 0x01;
    Spit(f, b);
  }, false);
}

TEST(DiskCache, TruncatedFilesAreDetectedAndRecompiled) {
  ExpectRecovers([](const std::string& f) { fs::resize_file(f, fs::file_size(f) / 2); }, false);
}

TEST(DiskCache, EntriesOfAnotherTorchtpuOrPluginVersionAreStale) {
  ExpectRecovers([](const std::string&) {}, true, Context("0.2.0"));
  graph::CacheContext other_plugin = Context();
  other_plugin.platform_version += "-next";
  ExpectRecovers([](const std::string&) {}, true, other_plugin);
}

TEST(DiskCache, HalfWrittenTemporaryFilesAreIgnoredAndCleanedUp) {
  TempDir t;
  Fresh(t.sub("p"), t.sub("e"))->Get(Doubler(4), 0);
  // A writer that died mid-write left a temporary file next to the entry; and
  // one whose rename never happened left only a temporary file.
  std::string entry = Entries(t.sub("e")).at(0);
  std::string bytes = Slurp(entry);
  std::string old_tmp = t.sub("e") + "/.tmp-" + fs::path(entry).filename().string() + "-1-0";
  std::string young_tmp = t.sub("e") + "/.tmp-" + fs::path(entry).filename().string() + "-2-0";
  Spit(old_tmp, bytes.substr(0, bytes.size() / 2));
  Spit(young_tmp, bytes.substr(0, bytes.size() / 3));
  struct utimbuf past{::time(nullptr) - 3600, ::time(nullptr) - 3600};
  ASSERT_EQ(::utime(old_tmp.c_str(), &past), 0);
  auto cache = Fresh(t.sub("p"), t.sub("e"));
  ExpectDoubles(*cache);
  EXPECT_EQ(cache->Counters().compiles, 0);
  EXPECT_EQ(cache->Counters().executables.abandoned_temp, 1);
  EXPECT_FALSE(fs::exists(old_tmp));
  EXPECT_TRUE(fs::exists(young_tmp));  // maybe a live writer: left alone
  bool listed = false;
  for (const auto& row : graph::DiskTier::Scan(t.sub("e"))) {
    if (row.file == fs::path(young_tmp).filename()) listed = !row.problem.empty();
  }
  EXPECT_TRUE(listed);

  // Only a temporary file, no entry: a miss, compiled and written.
  fs::remove(entry);
  auto fresh = Fresh(t.sub("p"), t.sub("e"));
  ExpectDoubles(*fresh);
  EXPECT_EQ(fresh->Counters().compiles, 1);
  EXPECT_EQ(fresh->Counters().executables.corrupt, 0);
}

TEST(DiskCache, ConcurrentWritersOfOneEntryAllSucceed) {
  TempDir t;
  graph::DiskTier tier(t.path, graph::DiskTier::kPrograms, 0);
  graph::EntryKey key = graph::ProgramKey(Context(), "sig");
  std::string payload(1 << 20, 'x');
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int k = 0; k < 5; ++k) tier.Store(key, "d", 0, payload);
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(tier.stats().writes, 40);
  EXPECT_EQ(tier.stats().write_errors, 0);
  EXPECT_EQ(Entries(t.path).size(), 1u);  // no temporary files left
  EXPECT_EQ(tier.Load(key), payload);
}

TEST(DiskCache, SizeLimitEvictsTheLeastRecentlyUsed) {
  TempDir t;
  graph::CacheContext ctx = Context();
  std::string payload(1000, 'x');
  graph::DiskTier writer(t.path, graph::DiskTier::kPrograms, 0);
  for (const char* sig : {"a", "b", "c"}) writer.Store(graph::ProgramKey(ctx, sig), sig, 0, payload);
  // Ages: a oldest, then b, then c; a is then used, so b is least recent.
  int64_t now = ::time(nullptr);
  int age = 300;
  for (const char* sig : {"a", "b", "c"}) {
    std::string f = t.path + "/" + graph::ProgramKey(ctx, sig).FileName();
    struct utimbuf times{now - age, now - age};
    ASSERT_EQ(::utime(f.c_str(), &times), 0);
    age -= 100;
  }
  int64_t one = static_cast<int64_t>(fs::file_size(t.path + "/" + graph::ProgramKey(ctx, "a").FileName()));
  graph::DiskTier limited(t.path, graph::DiskTier::kPrograms, 3 * one + one / 2);
  ASSERT_TRUE(limited.Load(graph::ProgramKey(ctx, "a")).has_value());
  limited.Store(graph::ProgramKey(ctx, "d"), "d", 0, payload);
  EXPECT_EQ(limited.stats().evictions, 1);
  EXPECT_TRUE(limited.Load(graph::ProgramKey(ctx, "a")).has_value());
  EXPECT_FALSE(limited.Load(graph::ProgramKey(ctx, "b")).has_value());
  EXPECT_TRUE(limited.Load(graph::ProgramKey(ctx, "c")).has_value());
  EXPECT_TRUE(limited.Load(graph::ProgramKey(ctx, "d")).has_value());
}

TEST(DiskCache, UnwritableFolderIsCountedNotRaised) {
  TempDir t;
  // A folder that cannot exist (its parent is a file): even root cannot write.
  Spit(t.sub("file"), "x");
  auto cache = Fresh(t.sub("file/p"), t.sub("file/e"));
  ExpectDoubles(*cache);
  EXPECT_EQ(cache->Counters().programs.write_errors, 1);
  EXPECT_EQ(cache->Counters().executables.write_errors, 1);
  EXPECT_EQ(cache->Counters().compiles, 1);
}

TEST(UnexpectedCompile, HookRunsOnlyForMissesAfterWarmupAndMayRefuse) {
  graph::CompileCache cache(testing_plugin::Client());
  std::vector<std::string> seen;
  cache.SetUnexpectedCompileHook([&](const std::string& d) {
    seen.push_back(d);
    if (d.find("f32[5]") != std::string::npos) throw std::runtime_error("refused " + d);
  });
  cache.Get(Doubler(4), 0);  // warmup
  cache.SetWarmupDone(true);
  cache.Get(Doubler(4), 0);  // a hit: no hook
  EXPECT_TRUE(seen.empty());
  cache.Get(Doubler(6), 0);  // new shape: hook, allowed
  EXPECT_THROW(cache.Get(Doubler(5), 0), std::runtime_error);
  EXPECT_EQ(seen, (std::vector<std::string>{"disk_test.double(f32[6])", "disk_test.double(f32[5])"}));
  auto c = cache.Counters();
  EXPECT_EQ(c.misses_after_warmup, 2);
  EXPECT_EQ(c.compiles, 2);  // the refused one was not compiled
  EXPECT_TRUE(c.warmup_done);
}
