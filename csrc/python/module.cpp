// torchtpu._C: the thin Python surface of the C++ runtime.
#include <torch/csrc/Generator.h>
#include <pybind11/stl.h>
#include <torch/extension.h>

#include "aten/runtime/device.h"
#include "aten/runtime/eager_mode.h"
#include "aten/runtime/fallback.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/graph_capture.h"
#include "aten/runtime/generator.h"
#include "aten/runtime/hooks.h"
#include "aten/kernels/registry.h"
#include "aten/runtime/runtime.h"

namespace py = pybind11;
using namespace torchtpu::aten;

PYBIND11_MODULE(_C, m) {
  m.doc() = "torchtpu C++ runtime";
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
    SetFallbackMode(fallback == "error" ? FallbackMode::kError
                    : fallback == "allow" ? FallbackMode::kAllow
                                          : FallbackMode::kWarn);
  });
  m.def("_is_initialized", &Runtime::Initialized);
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
    d["nodes_pending"] = s.nodes_pending;
    return d;
  });
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
}
