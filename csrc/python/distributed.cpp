// torchtpu._C.ProcessGroupTPU: the tpu c10d backend, a subclass of
// torch.distributed's Backend for Python (torchtpu/distributed/ creates it).
#include <torch/csrc/utils/pybind.h>

#include "aten/distributed/host_pool.h"
#include "aten/distributed/process_group_tpu.h"

namespace py = pybind11;
using torchtpu::aten::distributed::ProcessGroupTpu;
using torchtpu::aten::distributed::HostPool;
using torchtpu::aten::distributed::Transport;

void BindDistributed(py::module_& m) {
  // The base class is registered by torch's c10d bindings; it must exist
  // before a subclass can name it.
  py::module_::import("torch._C._distributed_c10d");
  py::class_<ProcessGroupTpu, c10d::Backend, c10::intrusive_ptr<ProcessGroupTpu>>(m, "ProcessGroupTPU")
      .def(py::init([](int rank, int size, const c10::intrusive_ptr<c10d::Backend>& wire, bool stages_through_host,
                       const std::string& name) {
             return c10::make_intrusive<ProcessGroupTpu>(rank, size, Transport{wire, stages_through_host, name});
           }),
           py::arg("rank"), py::arg("size"), py::arg("wire"), py::arg("stages_through_host") = true,
           py::arg("transport_name") = "gloo (host-staged)")
      .def_property_readonly("transport_name", [](const ProcessGroupTpu& pg) { return pg.transport().name; })
      // split_group deep-copies `options` for the new group; None makes the
      // C++ split use the wire's own options object, whose type the wire
      // (gloo) needs and whose Python form cannot be copied.
      .def_property_readonly("options", [](ProcessGroupTpu&) { return py::none(); })
      .def_property_readonly("wire", [](const ProcessGroupTpu& pg) { return pg.transport().wire; });
  // The host-staging pool of this process (aten/distributed/host_pool.h).
  m.def("_staging_pool_stats", [] {
    HostPool& pool = HostPool::Get();
    py::dict d;
    d["free_blocks"] = pool.free_blocks();
    d["free_bytes"] = pool.free_bytes();
    return d;
  });
}
