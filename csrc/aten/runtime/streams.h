// Streams and events on PJRT (torch.Stream / torch.Event / torch.tpu.*).
//
// The PJRT C API has no stream object: a device runs each launch once its
// input buffers are ready, and PJRT orders launches by the buffers they read
// and write. So a stream here is a host-side record: the completion events of
// the programs (and asynchronous host transfers) launched while it was the
// thread's current stream on that device, and of the work it was told to wait
// for (wait_event / wait_stream). Nothing about a launch changes with the
// stream; what streams give is the CUDA-shaped bookkeeping on top of it:
//  - an event captures a stream's unfinished work at record(); query() is
//    true once all of it completed, synchronize() awaits it;
//  - every completion is stamped (steady clock) by a PJRT_Event_OnReady
//    callback, so elapsed_time() is the time between the completions of two
//    recorded points, not between the host calls;
//  - a wait makes the waiting stream inherit the other's unfinished work, so
//    an event recorded on it later (and its synchronize) covers that work.
//    Data dependencies between launches are already ordered by PJRT, so no
//    launch has to be held back on the host;
//  - Tensor.record_stream(s) keeps the storage (and its memory accounting)
//    alive until the work recorded on s at that moment completed.
// Fused eager mode: record() and a change of current stream first launch
// the device's pending graph, so that the work belongs to the right stream.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include <c10/core/Storage.h>
#include <c10/core/Stream.h>

#include "pjrt/pjrt.h"

namespace torchtpu::aten {

// Written by the PJRT_Event_OnReady callback (on a plugin thread). Kept
// apart from the pjrt::Event so the callback never owns (and destroys) it.
struct Stamp {
  std::atomic<bool> ready{false};
  std::atomic<int64_t> ready_ns{0};  // steady clock, ns
};

// One launch's completion, stamped when PJRT reports it ready.
struct Completion {
  std::shared_ptr<pjrt::Event> event;
  std::shared_ptr<Stamp> stamp;
  uint64_t seq = 0;  // launch number on its device, from 1
  bool Ready() const { return stamp->ready.load(std::memory_order_acquire); }
};

// What an event recorded: the unfinished work of a stream at that moment.
struct Marker {
  int device = 0;
  int64_t record_ns = 0;
  uint64_t last_seq = 0;  // newest launch of the device when recorded
  std::vector<std::shared_ptr<Completion>> work;
  bool Ready() const;  // non-blocking
  void Wait() const;   // awaits the work; raises a launch's error
  // When the marker was reached: the later of its record time and the
  // completion of the work it captured. Call when Ready().
  int64_t ReachedNs() const;
};

int64_t SteadyNowNs();

// Hook for Runtime::Track: every launch's completion event comes here and is
// added to the calling thread's current stream on `device`.
std::shared_ptr<Completion> OnLaunch(int device, std::shared_ptr<pjrt::Event> event);

// The thread's current stream on a device (default: id 0) and switching it.
c10::Stream CurrentStream(c10::Device device);
c10::Stream ExchangeStream(c10::Stream stream);
c10::Stream NewStream(c10::Device device);

// `flush`: launch the device's pending fused graph first (user-visible
// records). The profiler records without flushing, so profiling does not
// change what gets fused.
std::shared_ptr<Marker> RecordMarker(const c10::Stream& stream, bool flush);
void WaitMarker(const c10::Stream& stream, const std::shared_ptr<Marker>& marker);
bool QueryStream(const c10::Stream& stream);
void SynchronizeStream(const c10::Stream& stream);

// Tensor.record_stream: keeps `storage` alive until the work on `stream`
// recorded so far completed.
void HoldUntilDone(const c10::Stream& stream, c10::Storage storage);
// Drops the holds whose work completed (called at synchronize points and
// launches; also by the memory statistics).
void ReleaseFinishedHolds();

}  // namespace torchtpu::aten
