#include "aten/runtime/index_checks.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "aten/runtime/fused_executor.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {
namespace {

struct PendingCheck {
  int device;
  at::Tensor flags;
  std::string op;
};

// A loop that never waits on the host would let checks pile up: past this
// many, the oldest are read (their programs are long done by then).
constexpr size_t kMaxPending = 1024;

std::atomic<bool> g_enabled{true};

struct Checks {
  std::mutex mu;
  std::vector<PendingCheck> pending;
};
Checks& TheChecks() {
  static auto* checks = new Checks;  // never destroyed: tensors outlive statics
  return *checks;
}

// The first failure among `checks` (in launch order), with the number of
// later ones; read outside the lock (reading waits for the device).
void RaiseFirstFailure(std::vector<PendingCheck>& checks) {
  const PendingCheck* first = nullptr;
  int64_t values[4] = {0, 0, 0, 0};
  int64_t more = 0;
  for (const PendingCheck& c : checks) {
    int64_t v[4];
    StorageData& flags = StorageOf(c.flags);
    MaterializeIfPending(flags);
    {
      std::lock_guard<std::mutex> lock(flags.mu);
      if (flags.lost) continue;  // its op never ran (a failed fused program): nothing to report
    }
    BufferAs(flags, hlo::DType::kI64)->ToHost(v, sizeof v);
    if (v[0] == 0) continue;
    if (first == nullptr) {
      first = &c;
      std::copy(v, v + 4, values);
    } else {
      ++more;
    }
  }
  if (first == nullptr) return;
  std::string op = first->op;
  checks.clear();  // the message owns what it needs; the tensors may go
  TORCH_CHECK_INDEX(false, "torchtpu: ", op, ": index ", values[1], " is out of bounds for dimension ",
                    values[2], " with size ", values[3],
                    more ? " (and " + std::to_string(more) + " more failed index checks)" : std::string(),
                    ". Reported at the first host wait after the op ran (device-side check; "
                    "TORCHTPU_CHECKS=off leaves it out)");
}

// The capture recording this thread's checks (SetIndexCheckRecorder).
thread_local std::vector<RecordedCheck>* t_recorder = nullptr;

}  // namespace

void SetIndexChecksEnabled(bool on) { g_enabled.store(on); }
bool IndexChecksEnabled() { return g_enabled.load(); }

void SetIndexCheckRecorder(std::vector<RecordedCheck>* recorder) { t_recorder = recorder; }

void AddIndexCheck(int device, at::Tensor flags, std::string op) {
  if (t_recorder) t_recorder->push_back(RecordedCheck{StorageOf(flags).id, op});
  std::vector<PendingCheck> oldest;
  {
    Checks& c = TheChecks();
    std::lock_guard<std::mutex> lock(c.mu);
    c.pending.push_back(PendingCheck{device, std::move(flags), std::move(op)});
    if (c.pending.size() > kMaxPending) {
      auto half = c.pending.begin() + static_cast<std::ptrdiff_t>(kMaxPending / 2);
      oldest.assign(std::make_move_iterator(c.pending.begin()), std::make_move_iterator(half));
      c.pending.erase(c.pending.begin(), half);
    }
  }
  RaiseFirstFailure(oldest);
}

void RaiseFailedIndexChecks(int device) {
  std::vector<PendingCheck> mine;
  {
    Checks& c = TheChecks();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.pending.empty()) return;
    std::vector<PendingCheck> keep;
    for (PendingCheck& p : c.pending) {
      (device < 0 || p.device == device ? mine : keep).push_back(std::move(p));
    }
    c.pending.swap(keep);
  }
  RaiseFirstFailure(mine);
}

int64_t PendingIndexChecks() {
  Checks& c = TheChecks();
  std::lock_guard<std::mutex> lock(c.mu);
  return static_cast<int64_t>(c.pending.size());
}

}  // namespace torchtpu::aten
