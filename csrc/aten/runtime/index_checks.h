// Device-side index range checks, asynchronous like CUDA's device asserts but
// recoverable. An indexing kernel asks its program for one more result (the
// lowering's range check, lower/index.cpp: found, first bad index, dimension,
// size); the runtime keeps those small tensors here and reads them when the
// host next waits on the device — a copy to the host (.cpu(), .item()) or
// synchronize() — and in debug mode right after each launch. A failure raises
// IndexError naming the op, its shapes and the first bad index, once; the
// device stays usable. TORCHTPU_CHECKS=off leaves the check out of the
// programs (its mode attribute is part of the node, so of the compile key).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace torchtpu::aten {

// The check mode attribute the index lowerings read (lower/index.cpp).
enum class IndexCheckMode : int64_t {
  kOff = 0,
  kNonNegative = 1,   // valid indices: [0, size)
  kWrapNegative = 2,  // valid indices: [-size, size), negatives counted from the end
};

void SetIndexChecksEnabled(bool on);
bool IndexChecksEnabled();

// Keeps `flags` (an int64[4] tpu tensor the op's program computes) until the
// next host wait on `device`; `op` describes the op ("gather(f32[3,4], i64[2])").
void AddIndexCheck(int device, at::Tensor flags, std::string op);

// Reads every pending check of `device` (all devices: -1), waiting for the
// programs that compute them, and raises IndexError for the first failure;
// later failures of the same wait are counted in its message, not raised again.
void RaiseFailedIndexChecks(int device);

// Number of checks not read yet (tests, statistics).
int64_t PendingIndexChecks();

// Graph capture (graph_capture.cpp) records the checks its region adds, so a
// replay of the region adds the same checks on its own results.
struct RecordedCheck {
  uint64_t storage_id;  // the flags tensor's storage
  std::string op;
};
// While set, AddIndexCheck on this thread also appends to `recorder` (null: off).
void SetIndexCheckRecorder(std::vector<RecordedCheck>* recorder);

}  // namespace torchtpu::aten
