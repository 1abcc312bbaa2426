// Where the bytes of a tpu collective travel between ranks.
//
// The transport is itself a c10d::Backend: the c10d collective API is the one
// interface every transport speaks, so the tpu backend above it never knows
// which wire it drives. What differs is the kind of tensor a transport takes:
//   - host-staged (the CPU plugin, and any plugin without cross-process
//     collectives): PyTorch's gloo ProcessGroup on host copies of the tensors;
//     the tpu backend stages device tensors to the host and writes results back.
//   - native (a plugin whose PJRT client was created with distributed options:
//     GPU, TPU): a backend that takes the device tensors themselves and runs
//     the collective as a device program (lower/collectives.h builds those
//     programs; the backend that launches them across processes is not
//     written yet, see docs/distributed.md); `stages_through_host == false`
//     is its switch.
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <string>

namespace torchtpu::aten::distributed {

struct Transport {
  c10::intrusive_ptr<c10d::Backend> wire;
  // True: `wire` takes host (CPU) tensors, so device tensors are staged.
  bool stages_through_host = true;
  std::string name;  // for messages: "gloo (host-staged)"
};

}  // namespace torchtpu::aten::distributed
