// torchtpu._C: the thin Python surface of the C++ runtime.
#include <torch/csrc/Generator.h>
#include <torch/extension.h>

#include "aten/runtime/device.h"
#include "aten/runtime/fallback.h"
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
}
