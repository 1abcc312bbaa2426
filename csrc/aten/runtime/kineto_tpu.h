// torch.profiler (Kineto) device activities for tpu programs: while a
// profiling session runs, every launch becomes a "kernel" activity on the
// tpu device from its start to its PJRT completion, linked to the CPU op
// that launched it, so key_averages() shows device time and the Chrome trace
// has a tpu row. Registered with torch's PrivateUse1 profiler registry.
#pragma once

#include <memory>
#include <string>

#include "aten/runtime/streams.h"

namespace torchtpu::aten {

// Names the launch made inside the scope (TORCHTPU_PROGRAM_RANGE opens one).
class ProgramScope {
 public:
  explicit ProgramScope(const std::string& description);
  ~ProgramScope();
  ProgramScope(const ProgramScope&) = delete;
  ProgramScope& operator=(const ProgramScope&) = delete;
 private:
  const std::string* previous_;
  int64_t previous_start_;
};

// Called by OnLaunch (streams.cpp) for every launch; cheap when no session runs.
void ProfileLaunch(int device, int64_t stream_id, const std::shared_ptr<Completion>& completion);

}  // namespace torchtpu::aten
