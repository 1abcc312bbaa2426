// torchtpu._C: the thin Python surface of the C++ runtime.
#include <torch/csrc/Generator.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include "aten/runtime/device.h"
#include "aten/runtime/eager_mode.h"
#include "aten/runtime/fallback.h"
#include "aten/runtime/index_checks.h"
#include "aten/runtime/op_call.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/graph_capture.h"
#include "aten/runtime/generator.h"
#include "aten/runtime/hooks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/scalar_mirror.h"
#include "graph/compile_cache.h"

#include <cstdio>
#include <map>
#include <mutex>

namespace py = pybind11;
using namespace torchtpu::aten;

void BindDistributed(py::module_& m);  // distributed.cpp: the tpu c10d backend

// ---- The persistent compile cache (see the block at the end of the module). ----
namespace {

struct CacheSetup {
  std::mutex mu;
  std::string programs_dir, executables_dir, version, settings, recompile = "off";
  int64_t max_bytes = 0;
  int64_t memory_programs = 0;  // TORCHTPU_CACHE_MEMORY_PROGRAMS (0: no limit)
};

CacheSetup& TheCacheSetup() {
  static CacheSetup setup;
  return setup;
}

// TORCHTPU_RECOMPILE: off installs no hook (the hit path is unchanged);
// warn/error call torchtpu._cache._on_unexpected_compile, which warns or
// raises torchtpu.UnexpectedCompileError naming the program and the user's frame.
void InstallRecompileHook(torchtpu::graph::CompileCache& cache) {
  std::string mode;
  {
    std::lock_guard<std::mutex> lock(TheCacheSetup().mu);
    mode = TheCacheSetup().recompile;
  }
  if (mode == "off") {
    cache.SetUnexpectedCompileHook(nullptr);
    return;
  }
  cache.SetUnexpectedCompileHook([mode](const std::string& description) {
    py::gil_scoped_acquire gil;
    // Throws py::error_already_set (restored as the Python exception by
    // torch's and pybind's handlers) when the policy is error.
    py::module_::import("torchtpu._cache").attr("_on_unexpected_compile")(description, mode);
  });
}

void ApplyCacheSetup(torchtpu::graph::CompileCache& cache) {
  using torchtpu::graph::DiskTier;
  CacheSetup& s = TheCacheSetup();
  std::unique_ptr<DiskTier> programs, executables;
  torchtpu::graph::CacheContext context;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    cache.SetMemoryLimit(s.memory_programs);
  }
  try {
    std::lock_guard<std::mutex> lock(s.mu);
    if (!s.programs_dir.empty()) {
      programs = std::make_unique<DiskTier>(s.programs_dir, DiskTier::kPrograms, s.max_bytes);
    }
    if (!s.executables_dir.empty()) {
      executables = std::make_unique<DiskTier>(s.executables_dir, DiskTier::kExecutables, s.max_bytes);
    }
    context = torchtpu::graph::ContextFor(*cache.client(), s.version, s.settings);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "torchtpu: the persistent compile cache is off: %s\n", e.what());
    programs.reset();
    executables.reset();
  }
  cache.ConfigureDisk(std::move(programs), std::move(executables), std::move(context));
  InstallRecompileHook(cache);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "torchtpu C++ runtime";
  BindDistributed(m);
  m.def("_init", []() {
    RegisterHooks();
    RegisterAllOps();
  });
  m.def("_configure", [](const std::string& platform, int64_t cpu_device_count,
                         const std::vector<std::string>& search_roots, int64_t memory_limit,
                         const std::string& fallback) {
    RuntimeConfig c;
    c.platform = platform;
    c.cpu_device_count = cpu_device_count;
    c.search_roots = search_roots;
    c.memory_limit = memory_limit;
    Runtime::Configure(c);
    // After a failed start, the next one reads the settings again
    // (torchtpu/_registration.py: configure_runtime).
    Runtime::SetConfigRefresher([] {
      py::gil_scoped_acquire gil;
      try {
        py::module_::import("torchtpu._registration").attr("configure_runtime")();
      } catch (py::error_already_set& e) {
        TORCH_CHECK(false, "torchtpu: ", e.what());
      }
    });
    SetFallbackMode(fallback == "error" ? FallbackMode::kError
                    : fallback == "allow" ? FallbackMode::kAllow
                                          : FallbackMode::kWarn);
  });
  m.def("_is_initialized", &Runtime::Initialized);
  // A user op's StableHLO function (torchtpu/_custom_lowering.py checks it
  // against the operands and declares the results): one node, run in the
  // current execution mode like any ATen op.
  m.def("_stablehlo_call", [](const std::string& op, const std::string& text, const std::string& symbol,
                              const std::string& result_types, const std::vector<at::Tensor>& inputs) {
    OpCall call("custom:" + op);
    call.Attr(text).Attr(symbol).Attr(result_types);
    for (const at::Tensor& t : inputs) call.In(t);
    return call.Run();
  });
  m.def("_set_index_checks", [](bool on) { SetIndexChecksEnabled(on); });
  m.def("_get_index_checks", []() { return IndexChecksEnabled(); });
  m.def("_pending_index_checks", []() { return PendingIndexChecks(); });
  m.def("_scalar_mirror_stats", []() {
    MirrorStats s = ThreadMirrorStats();
    return std::map<std::string, int64_t>{{"hits", s.hits}, {"fills", s.fills}};
  });
  m.def("_lazy_init", []() { Runtime::Get(); });
  m.def("device_count", []() { return DeviceCount(); });
  m.def("current_device", []() { return CurrentDevice(); });
  m.def("set_device", [](int index) { SetCurrentDevice(index); });
  m.def("synchronize", [](int device) {
    py::gil_scoped_release release;
    Runtime::Get().Synchronize(device);
  }, py::arg("device") = -1);
  m.def("fallback_stats", []() { return FallbackStats(); });
  m.def("reset_fallback_stats", []() { ResetFallbackStats(); });
  m.def("skipped_registrations", []() { return SkippedOps(); });
  m.def("platform_info", []() {
    Runtime& rt = Runtime::Get();
    std::map<std::string, std::string> info = rt.client().plugin()->Attributes();
    info["platform_name"] = rt.client().platform_name();
    info["platform_version"] = rt.client().platform_version();
    info["plugin_path"] = rt.client().plugin()->path();
    info["pjrt_api_version"] = std::to_string(rt.client().plugin()->api_major()) + "." +
                               std::to_string(rt.client().plugin()->api_minor());
    return info;
  });
  m.def("compile_cache_stats", []() {
    py::list rows;
    for (const auto& s : Runtime::Get().cache().Stats()) {
      py::dict d;
      d["op"] = s.description;
      d["device"] = s.device;
      d["hits"] = s.hits;
      d["compile_seconds"] = s.compile_seconds;
      d["last_use"] = s.last_use;
      d["source"] = s.source;                  // compiled, programs or executables (disk tier)
      d["calls"] = s.calls;                    // counted while profiling
      d["device_seconds"] = s.device_seconds;  // likewise
      rows.append(d);
    }
    return rows;
  });
  m.def("compile_cache_counters", []() {
    auto& c = Runtime::Get().cache();
    return std::make_pair(c.hits(), c.misses());
  });
  // RNG: the default generator of a device as a torch.Generator (the same
  // C++ generator the kernels draw from), and seeding all of them.
  m.def("_rng_default_generator", [](int index) {
    return py::reinterpret_steal<py::object>(THPGenerator_Wrap(DefaultGenerator(index)));
  });
  m.def("_rng_manual_seed_all", [](uint64_t seed) { ManualSeedAll(seed); });
  m.def("compile_cache_clear", []() { Runtime::Get().cache().Clear(); });

  // Execution modes (torchtpu.experimental) and the fused executor.
  m.def("_set_eager_mode", [](const std::string& mode) { SetEagerMode(ParseEagerMode(mode)); });
  m.def("_get_eager_mode", []() { return std::string(EagerModeName(CurrentEagerMode())); });
  m.def("_set_check_finite", [](bool on) { SetCheckFinite(on); });
  m.def("_get_check_finite", []() { return CheckFinite(); });
  m.def("_set_fuse_max_nodes", [](int64_t n) { SetFuseMaxNodes(n); });
  m.def("_get_fuse_max_nodes", []() { return FuseMaxNodes(); });
  m.def("_inject_compile_failure", [](bool fused_programs, const std::string& op) {
    InjectCompileFailure(fused_programs, op);
  }, py::arg("fused_programs") = false, py::arg("op") = "");
  m.def("_cut", [](int device, const std::string& reason) {
    CutReason r = reason == "optimizer_step" ? CutReason::kOptimizerStep : CutReason::kExplicit;
    py::gil_scoped_release release;
    if (device < 0) CutAll(r); else Cut(device, r);
  }, py::arg("device") = -1, py::arg("reason") = "explicit");
  m.def("_fused_stats", []() {
    FusedStats s = GetFusedStats();
    py::dict d;
    d["nodes_recorded"] = s.nodes_recorded;
    d["cuts"] = s.cuts;
    d["cuts_op_by_op"] = s.cuts_op_by_op;
    d["nodes_pending"] = s.nodes_pending;
    return d;
  });
  m.def("_clear_compile_history", []() { ClearCompileHistory(); });
  // torch.compile(backend="tpu"): capture a region as one program, replay it.
  py::class_<GraphReplay, std::shared_ptr<GraphReplay>>(m, "_GraphReplay")
      .def("run", [](GraphReplay& r, const std::vector<at::Tensor>& inputs) -> py::object {
        auto outs = r.Run(inputs);
        if (!outs) return py::none();
        return py::cast(*outs);
      })
      .def_property_readonly("replays", &GraphReplay::replays);
  py::class_<GraphCapture>(m, "_GraphCapture")
      .def(py::init<>())
      .def("end", [](GraphCapture& c, const std::vector<at::Tensor>& inputs,
                     const std::vector<std::optional<at::Tensor>>& outputs) {
        std::string why;
        std::shared_ptr<GraphReplay> replay = c.End(inputs, outputs, &why);
        return py::make_tuple(replay ? py::cast(replay) : py::none(), why);
      })
      .def("abort", &GraphCapture::Abort);
  m.def("_set_cut_logging", [](bool on) { SetCutLogging(on); });
  m.def("_cut_log", []() {
    py::list rows;
    for (const CutLogEntry& e : CutLog()) {
      py::dict d;
      d["key_hash"] = e.key_hash;
      d["nodes"] = e.nodes;
      d["device"] = e.device;
      d["reason"] = CutReasonName(e.reason);
      rows.append(d);
    }
    return rows;
  });

  // ---- The persistent compile cache, warmup and the unexpected-compile
  // detector (torchtpu/_cache.py, torchtpu/_cache_cli.py). ----
  m.def("_configure_disk_cache", [](const std::string& programs_dir, const std::string& executables_dir,
                                    int64_t max_bytes, const std::string& version, const std::string& settings,
                                    const std::string& recompile, int64_t memory_programs) {
    CacheSetup& setup = TheCacheSetup();
    {
      std::lock_guard<std::mutex> lock(setup.mu);
      setup.programs_dir = programs_dir;
      setup.executables_dir = executables_dir;
      setup.max_bytes = max_bytes;
      setup.memory_programs = memory_programs;
      setup.version = version;
      setup.settings = settings;
      setup.recompile = recompile;
    }
    if (Runtime::Initialized()) {
      ApplyCacheSetup(Runtime::Get().cache());
    } else {
      RuntimeConfig c = Runtime::Config();
      c.on_cache_created = ApplyCacheSetup;
      Runtime::Configure(c);
    }
  });
  m.def("_set_recompile_policy", [](const std::string& mode) {
    {
      std::lock_guard<std::mutex> lock(TheCacheSetup().mu);
      TheCacheSetup().recompile = mode;
    }
    if (Runtime::Initialized()) InstallRecompileHook(Runtime::Get().cache());
  });
  // Tests lower the mapping budget to see the cache give mappings back.
  m.def("_set_mapping_budget", [](int64_t budget, int64_t floor) {
    Runtime::Get().cache().SetMappingBudget(budget, static_cast<size_t>(floor < 0 ? 0 : floor));
  }, py::arg("budget"), py::arg("floor") = static_cast<int64_t>(torchtpu::graph::CompileCache::kMappingFloor));
  m.def("_set_warmup_done", [](bool done) { Runtime::Get().cache().SetWarmupDone(done); });
  m.def("_compile_counters", []() {
    py::dict d;
    if (!Runtime::Initialized()) return d;
    torchtpu::graph::CompileCounters c = Runtime::Get().cache().Counters();
    auto tier = [](bool on, const std::string& dir, const torchtpu::graph::DiskTierStats& s) {
      py::dict t;
      t["enabled"] = on;
      t["dir"] = dir;
      t["hits"] = s.hits;
      t["misses"] = s.misses;
      t["writes"] = s.writes;
      t["corrupt"] = s.corrupt;
      t["stale"] = s.stale;
      t["evictions"] = s.evictions;
      t["write_errors"] = s.write_errors;
      t["abandoned_temp"] = s.abandoned_temp;
      t["hit_seconds"] = s.hit_seconds;
      return t;
    };
    py::dict memory;
    memory["hits"] = c.memory_hits;
    memory["misses"] = c.memory_misses;
    memory["evictions"] = c.memory_evictions;
    memory["programs"] = c.memory_programs;
    memory["limit"] = c.memory_limit;
    memory["mapping_budget"] = c.mapping_budget;
    d["memory"] = memory;
    d["programs"] = tier(c.programs_on, c.programs_dir, c.programs);
    d["executables"] = tier(c.executables_on, c.executables_dir, c.executables);
    d["lowerings"] = c.lowerings;
    d["compiles"] = c.compiles;
    d["misses_after_warmup"] = c.misses_after_warmup;
    d["warmup_done"] = c.warmup_done;
    return d;
  });
  m.def("_set_profiling", [](bool on) { torchtpu::graph::SetProfiling(on); });
  m.def("_disk_cache_scan", [](const std::string& dir) {
    py::list rows;
    for (const auto& e : torchtpu::graph::DiskTier::Scan(dir)) {
      py::dict d;
      d["file"] = e.file;
      d["tier"] = e.tier;
      d["description"] = e.description;
      d["hits"] = e.hits;
      d["compile_seconds"] = e.compile_seconds;
      d["last_use"] = e.last_use;
      d["bytes"] = e.bytes;
      d["identity"] = e.identity;
      d["problem"] = e.problem;
      rows.append(d);
    }
    return rows;
  });
  m.def("_disk_cache_identity", []() {
    return Runtime::Get().cache().context().Identity();
  });
}
