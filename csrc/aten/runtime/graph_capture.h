// Capturing a region as one fused program, and replaying it: how
// torch.compile(backend="tpu") runs a compiled FX graph after its first call
// without going through the dispatcher per op. The first call runs the graph
// through the ordinary kernels in fused mode; if the region became exactly one
// program whose arguments are the inputs' storages (or constants) and whose
// results are the outputs and in-place updates of the inputs, later calls
// with inputs of the same metadata launch that program directly.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aten/runtime/eager_mode.h"
#include "aten/runtime/fused_executor.h"
#include "aten/runtime/index_checks.h"

namespace torchtpu::aten {

class GraphReplay;

class GraphCapture {
 public:
  // Launches pending work, switches to fused mode and observes the cuts.
  GraphCapture();
  // Restores the mode and stops observing (also when End was never called).
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  // Ends the region, launching it. Returns its replay, or null with the
  // reason in `why` when it cannot be replayed (several programs, random
  // draws, outputs the program did not produce, ...): then the caller runs
  // the region again on every call.
  std::shared_ptr<GraphReplay> End(const std::vector<at::Tensor>& inputs,
                                   const std::vector<std::optional<at::Tensor>>& outputs, std::string* why);
  // Gives up on the region (it raised): restores the mode; what it recorded
  // stays pending and runs at the next cut.
  void Abort() { Finish(); }

 private:
  void Finish();
  struct Seen {
    std::shared_ptr<pjrt::Executable> executable;
    std::vector<hlo::TensorType> result_types;
    std::string description;
    int device = 0;
    std::vector<std::shared_ptr<pjrt::Buffer>> inputs;
    std::vector<hlo::TensorType> input_types;
    std::vector<uint64_t> input_sources;
    std::vector<int> donate;
    std::vector<std::vector<uint64_t>> output_ids;  // storage ids per program result
  };
  std::vector<Seen> seen_;
  std::vector<RecordedCheck> checks_;  // index checks the region added
  EagerMode previous_mode_;
  uint64_t draws_at_begin_ = 0;
  bool finished_ = false;
};

// The metadata a replay requires of a tensor: what the program's views of it
// were lowered for.
struct TensorMeta {
  c10::ScalarType dtype;
  std::vector<int64_t> sizes, strides;
  int64_t offset = 0;
  size_t storage_nbytes = 0;
  int device = 0;
  static TensorMeta Of(const at::Tensor& t);
  bool operator==(const TensorMeta& o) const;
};

class GraphReplay {
 public:
  // The outputs for `inputs`, or nullopt when their metadata differs from the
  // captured call's (the caller then runs the region through the kernels).
  std::optional<std::vector<std::optional<at::Tensor>>> Run(const std::vector<at::Tensor>& inputs);
  int64_t replays() const { return replays_; }

 private:
  friend class GraphCapture;
  struct Arg {
    int placeholder = -1;                    // >= 0: that input's storage
    std::shared_ptr<pjrt::Buffer> constant;  // otherwise this buffer
    hlo::DType dtype;
    int donated_to = -1;
  };
  struct Output {
    enum Kind { kNone, kFresh, kAlias } kind = kNone;
    int source = -1;  // program result (kFresh) or input (kAlias)
    TensorMeta meta;
  };
  int device_ = 0;
  std::string description_;
  std::shared_ptr<pjrt::Executable> executable_;
  std::vector<hlo::TensorType> result_types_;
  std::vector<TensorMeta> inputs_;
  std::vector<Arg> args_;
  std::vector<std::pair<int, int>> mutations_;  // (program result, input)
  std::vector<Output> outputs_;
  // Program results that are index-check flags: each replay hands them to
  // the pending checks (index_checks.h), as the kernels' launches do.
  std::vector<std::pair<int, std::string>> checks_;  // (program result, op)
  int64_t replays_ = 0;
};

}  // namespace torchtpu::aten
