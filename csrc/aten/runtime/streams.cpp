#include "aten/runtime/streams.h"

#include <c10/util/Exception.h>

#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <utility>

#include "aten/runtime/fused_executor.h"
#include "aten/runtime/kineto_tpu.h"
#include "aten/runtime/runtime.h"

namespace torchtpu::aten {
namespace {

using StreamKey = std::pair<int, int64_t>;  // (device, stream id)

struct Registry {
  std::mutex mu;
  // Unfinished work per stream; finished entries are pruned as new ones come.
  std::map<StreamKey, std::vector<std::shared_ptr<Completion>>> work;
  std::unordered_map<int, uint64_t> launches;  // per device
  int64_t next_id = 1;                         // 0 is every device's default stream
};
Registry& R() {
  static auto* r = new Registry;  // never destroyed: plugin threads may stamp late
  return *r;
}

struct Hold {
  std::shared_ptr<Marker> marker;
  c10::Storage storage;
};
std::mutex g_holds_mu;
std::vector<Hold>& Holds() {
  static auto* h = new std::vector<Hold>;
  return *h;
}

// The thread's current stream id per device (absent: the default stream).
thread_local std::unordered_map<int, int64_t> t_current;

int64_t CurrentId(int device) {
  auto it = t_current.find(device);
  return it == t_current.end() ? 0 : it->second;
}

void Prune(std::vector<std::shared_ptr<Completion>>& list) {
  std::vector<std::shared_ptr<Completion>> keep;
  keep.reserve(list.size());
  for (auto& c : list) {
    if (!c->Ready()) keep.push_back(std::move(c));
  }
  list.swap(keep);
}

// Launches the device's pending fused graph so that it is part of what a
// record captures. Nothing to do before the runtime exists.
void Flush(int device) {
  if (!Runtime::Initialized()) return;
  Cut(device, CutReason::kSynchronize);
}

}  // namespace

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Marker::Ready() const {
  for (const auto& c : work) {
    if (!c->Ready()) return false;
  }
  return true;
}

void Marker::Wait() const {
  for (const auto& c : work) {
    c->event->Await();  // raises the launch's error
    // PJRT runs OnReady callbacks when the event is set but in no fixed
    // order with the waiter woken by Await: wait for the stamp too.
    while (!c->Ready()) std::this_thread::yield();
  }
}

int64_t Marker::ReachedNs() const {
  int64_t t = record_ns;
  for (const auto& c : work) t = std::max(t, c->stamp->ready_ns.load(std::memory_order_acquire));
  return t;
}

std::shared_ptr<Completion> OnLaunch(int device, std::shared_ptr<pjrt::Event> event) {
  auto c = std::make_shared<Completion>();
  c->event = std::move(event);
  c->stamp = std::make_shared<Stamp>();
  std::shared_ptr<Stamp> stamp = c->stamp;
  c->event->OnReady([stamp](bool) {
    // Errors are raised by whoever awaits the event; here only the time.
    stamp->ready_ns.store(SteadyNowNs(), std::memory_order_release);
    stamp->ready.store(true, std::memory_order_release);
  });
  ProfileLaunch(device, CurrentId(device), c);  // torch.profiler device activity (kineto_tpu.h)
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  c->seq = ++r.launches[device];
  auto& list = r.work[{device, CurrentId(device)}];
  if (list.size() > 32) Prune(list);
  list.push_back(c);
  return c;
}

c10::Stream CurrentStream(c10::Device device) {
  return c10::Stream(c10::Stream::UNSAFE, device, CurrentId(device.index()));
}

c10::Stream ExchangeStream(c10::Stream stream) {
  const int device = stream.device_index();
  c10::Stream old = CurrentStream(stream.device());
  if (old.id() == stream.id()) return old;
  // Deferred (fused) work was issued under the old stream: launch it now so
  // its completion is recorded there, not on the new one. Called from
  // noexcept guard code: a failing graph marks its results lost (raised when
  // they are read), so the error is not lost by ignoring it here.
  try {
    Flush(device);
  } catch (...) {
  }
  if (stream.id() == 0) {
    t_current.erase(device);
  } else {
    t_current[device] = stream.id();
  }
  return old;
}

c10::Stream NewStream(c10::Device device) {
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  return c10::Stream(c10::Stream::UNSAFE, device, r.next_id++);
}

std::shared_ptr<Marker> RecordMarker(const c10::Stream& stream, bool flush) {
  const int device = stream.device_index();
  if (flush) Flush(device);
  auto m = std::make_shared<Marker>();
  m->device = device;
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& list = r.work[{device, stream.id()}];
  Prune(list);
  // After the pruning: whatever finished before this point finished before
  // record_ns, so leaving it out does not change ReachedNs().
  m->record_ns = SteadyNowNs();
  m->work = list;
  m->last_seq = r.launches[device];
  return m;
}

void WaitMarker(const c10::Stream& stream, const std::shared_ptr<Marker>& marker) {
  if (!marker) return;
  Registry& r = R();
  std::lock_guard<std::mutex> lock(r.mu);
  auto& list = r.work[{stream.device_index(), stream.id()}];
  for (const auto& c : marker->work) {
    if (!c->Ready()) list.push_back(c);
  }
}

bool QueryStream(const c10::Stream& stream) {
  bool ready = RecordMarker(stream, true)->Ready();
  ReleaseFinishedHolds();
  return ready;
}

void SynchronizeStream(const c10::Stream& stream) {
  RecordMarker(stream, true)->Wait();
  ReleaseFinishedHolds();
}

void HoldUntilDone(const c10::Stream& stream, c10::Storage storage) {
  std::shared_ptr<Marker> marker = RecordMarker(stream, true);
  ReleaseFinishedHolds();
  if (marker->Ready()) return;  // nothing left to outlive
  std::lock_guard<std::mutex> lock(g_holds_mu);
  Holds().push_back(Hold{std::move(marker), std::move(storage)});
}

void ReleaseFinishedHolds() {
  std::vector<Hold> done;
  {
    std::lock_guard<std::mutex> lock(g_holds_mu);
    auto& holds = Holds();
    std::vector<Hold> keep;
    for (auto& h : holds) {
      (h.marker->Ready() ? done : keep).push_back(std::move(h));
    }
    holds.swap(keep);
  }
  // `done` frees the storages here, outside the lock: a free may take the
  // fused graph's lock.
}

}  // namespace torchtpu::aten
