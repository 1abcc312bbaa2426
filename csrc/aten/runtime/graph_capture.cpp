#include "aten/runtime/graph_capture.h"

#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <unordered_map>

#include "aten/runtime/device.h"
#include "aten/runtime/dtype.h"
#include "aten/runtime/errors.h"
#include "aten/runtime/generator.h"
#include "aten/runtime/index_checks.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/storage.h"
#include "aten/runtime/program_range.h"

namespace torchtpu::aten {

TensorMeta TensorMeta::Of(const at::Tensor& t) {
  TensorMeta m;
  m.dtype = t.scalar_type();
  m.sizes = t.sizes().vec();
  m.strides = t.strides().vec();
  m.offset = t.storage_offset();
  m.storage_nbytes = t.storage().nbytes();
  m.device = t.device().index();
  return m;
}

bool TensorMeta::operator==(const TensorMeta& o) const {
  return dtype == o.dtype && sizes == o.sizes && strides == o.strides && offset == o.offset &&
         storage_nbytes == o.storage_nbytes && device == o.device;
}

GraphCapture::GraphCapture() {
  CutAll(CutReason::kCapture);
  previous_mode_ = CurrentEagerMode();
  SetEagerMode(EagerMode::kFused);
  draws_at_begin_ = DrawCount();
  SetIndexCheckRecorder(&checks_);
  SetCutObserver([this](const CutRecord& r, CutReason) {
    Seen s;
    if (r.entry == nullptr) {  // ran op by op: nothing to replay (End fails)
      seen_.push_back(std::move(s));
      return;
    }
    s.executable = r.entry->executable;
    s.result_types = r.entry->program.result_types;
    s.description = r.entry->description;
    s.device = r.device;
    s.inputs = r.inputs;
    s.input_types = r.input_types;
    s.input_sources = r.input_sources;
    s.donate = r.donate;
    for (const auto& storages : r.output_storages) {
      s.output_ids.emplace_back();
      for (const StorageData* d : storages) s.output_ids.back().push_back(d->id);
    }
    seen_.push_back(std::move(s));
  });
}

void GraphCapture::Finish() {
  if (finished_) return;
  finished_ = true;
  SetCutObserver(nullptr);
  SetIndexCheckRecorder(nullptr);
  SetEagerMode(previous_mode_);
}

GraphCapture::~GraphCapture() {
  try {
    Finish();
  } catch (...) {
    // A failed cut while unwinding: its error is already on its way.
  }
}

std::shared_ptr<GraphReplay> GraphCapture::End(const std::vector<at::Tensor>& inputs,
                                               const std::vector<std::optional<at::Tensor>>& outputs,
                                               std::string* why) {
  try {
    CutAll(CutReason::kCapture);
  } catch (...) {
    Finish();
    throw;
  }
  Finish();
  auto fail = [&](const std::string& reason) -> std::shared_ptr<GraphReplay> {
    if (why) *why = reason;
    return nullptr;
  };
  if (seen_.size() != 1) return fail("the region launched " + std::to_string(seen_.size()) + " programs");
  if (DrawCount() != draws_at_begin_) return fail("the region draws random numbers");
  const Seen& s = seen_[0];
  if (!s.executable) return fail("the region's program did not compile (its ops ran one by one)");

  auto replay = std::make_shared<GraphReplay>();
  replay->device_ = s.device;
  replay->description_ = s.description;
  replay->executable_ = s.executable;
  replay->result_types_ = s.result_types;
  std::unordered_map<uint64_t, int> input_of;  // storage id -> first input on it
  for (size_t j = 0; j < inputs.size(); ++j) {
    const at::Tensor& t = inputs[j];
    if (!t.device().is_privateuseone()) return fail("input " + std::to_string(j) + " is not a tpu tensor");
    replay->inputs_.push_back(TensorMeta::Of(t));
    input_of.emplace(StorageOf(t).id, static_cast<int>(j));
  }
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    GraphReplay::Arg arg;
    auto it = input_of.find(s.input_sources[i]);
    if (it != input_of.end()) {
      arg.placeholder = it->second;
    } else {
      arg.constant = s.inputs[i];  // a scalar, or a tensor the region did not take as input
    }
    arg.dtype = s.input_types.at(i).dtype;
    arg.donated_to = i < s.donate.size() ? s.donate[i] : -1;
    // A buffer the region read but did not take as input (a constant the
    // graph made, e.g. SDPA's causal mask under autocast) that the captured
    // launch donated is gone: a replay would pass a deleted buffer.
    if (arg.placeholder < 0 && arg.donated_to >= 0) {
      return fail("the region donated a buffer it does not take as input (argument " + std::to_string(i) + ")");
    }
    replay->args_.push_back(std::move(arg));
  }
  std::unordered_map<uint64_t, int> result_of;  // storage id -> program result
  for (size_t r = 0; r < s.output_ids.size(); ++r) {
    for (uint64_t id : s.output_ids[r]) {
      result_of.emplace(id, static_cast<int>(r));
      auto in = input_of.find(id);
      if (in != input_of.end()) replay->mutations_.emplace_back(static_cast<int>(r), in->second);
    }
  }
  std::unordered_map<uint64_t, bool> claimed;  // storages of outputs and mutated inputs
  for (const auto& [r, j] : replay->mutations_) claimed[StorageOf(inputs[j]).id] = true;
  for (size_t k = 0; k < outputs.size(); ++k) {
    GraphReplay::Output out;
    if (outputs[k].has_value() && outputs[k]->defined()) {
      const at::Tensor& t = *outputs[k];
      if (!t.device().is_privateuseone()) return fail("output " + std::to_string(k) + " is not a tpu tensor");
      out.meta = TensorMeta::Of(t);
      uint64_t id = StorageOf(t).id;
      auto in = input_of.find(id);
      auto res = result_of.find(id);
      if (in != input_of.end()) {
        out.kind = GraphReplay::Output::kAlias;
        out.source = in->second;
      } else if (res != result_of.end()) {
        out.kind = GraphReplay::Output::kFresh;
        out.source = res->second;
      } else {
        return fail("output " + std::to_string(k) + " was not computed by the region");
      }
      claimed[id] = true;
    }
    replay->outputs_.push_back(std::move(out));
  }
  // The region's index checks: their flags are program results the pending
  // checks hold, which a replay hands over the same way.
  for (const RecordedCheck& c : checks_) {
    auto res = result_of.find(c.storage_id);
    if (res == result_of.end() || claimed.count(c.storage_id)) continue;
    replay->checks_.emplace_back(res->second, c.op);
    claimed[c.storage_id] = true;
  }
  for (const auto& ids : s.output_ids) {
    for (uint64_t id : ids) {
      if (!claimed.count(id)) return fail("the region wrote a tensor that is neither an input nor an output");
    }
  }
  return replay;
}

std::optional<std::vector<std::optional<at::Tensor>>> GraphReplay::Run(const std::vector<at::Tensor>& inputs) {
  if (inputs.size() != inputs_.size()) return std::nullopt;
  for (size_t j = 0; j < inputs.size(); ++j) {
    if (!inputs[j].defined() || !inputs[j].device().is_privateuseone()) return std::nullopt;
    if (!(TensorMeta::Of(inputs[j]) == inputs_[j])) return std::nullopt;
  }
  std::vector<std::shared_ptr<pjrt::Buffer>> buffers;
  buffers.reserve(args_.size());
  for (const Arg& a : args_) {
    buffers.push_back(a.placeholder >= 0 ? BufferAs(StorageOf(inputs[a.placeholder]), a.dtype) : a.constant);
  }
  // Donate only what the program replaces: an input's buffer that its
  // storage alone holds (one reference there, one here) and that appears once.
  std::vector<bool> mutated(inputs.size(), false);
  for (const auto& [r, j] : mutations_) mutated[j] = true;
  std::vector<int64_t> non_donatable;
  for (size_t i = 0; i < args_.size(); ++i) {
    if (args_[i].donated_to < 0) continue;
    bool ok = args_[i].placeholder >= 0 && mutated[args_[i].placeholder] && buffers[i].use_count() <= 2;
    for (size_t k = 0; ok && k < buffers.size(); ++k) ok = k == i || buffers[k] != buffers[i];
    if (!ok) non_donatable.push_back(static_cast<int64_t>(i));
  }
  std::vector<pjrt::Buffer*> args;
  for (auto& b : buffers) args.push_back(b.get());
  pjrt::ExecuteResult result;
  {
    TORCHTPU_PROGRAM_RANGE(description_);  // profiler row for this launch (program_range.h)
    try {
      result = executable_->Execute({args}, non_donatable);
    } catch (const pjrt::Error& e) {
      RaiseDeviceError(description_, e);
    }
    buffers.clear();
    Runtime::Get().Track(device_, result.done.empty() ? nullptr : std::move(result.done[0]));
  }
  std::vector<std::shared_ptr<pjrt::Buffer>> results;
  for (auto& r : result.outputs.at(0)) results.emplace_back(std::move(r));

  for (const auto& [r, j] : mutations_) SetBuffer(StorageOf(inputs[j]), results.at(r), result_types_.at(r).dtype);
  for (const auto& [r, op] : checks_) {
    const hlo::TensorType& type = result_types_.at(r);
    at::Tensor flags = at::empty({type.numel()}, at::TensorOptions().dtype(ToTorch(type.dtype)).device(TpuDevice(device_)));
    SetBuffer(StorageOf(flags), results.at(r), type.dtype);
    AddIndexCheck(device_, std::move(flags), op);
  }
  std::unordered_map<int, at::Tensor> fresh;  // program result -> the storage's base tensor
  std::vector<std::optional<at::Tensor>> outs;
  for (const Output& o : outputs_) {
    if (o.kind == Output::kNone) {
      outs.emplace_back(std::nullopt);
      continue;
    }
    auto options = at::TensorOptions().dtype(o.meta.dtype).device(TpuDevice(device_));
    at::Tensor base;
    if (o.kind == Output::kAlias) {
      base = inputs[o.source];
    } else {
      auto it = fresh.find(o.source);
      if (it == fresh.end()) {
        const hlo::TensorType& type = result_types_.at(o.source);
        base = at::empty({type.numel()}, options.dtype(ToTorch(type.dtype)));
        SetBuffer(StorageOf(base), results.at(o.source), type.dtype);
        it = fresh.emplace(o.source, base).first;
      }
      base = it->second;
    }
    at::Tensor t = at::empty({0}, options);
    t.set_(base.storage(), o.meta.offset, o.meta.sizes, o.meta.strides);
    outs.emplace_back(std::move(t));
  }
  ++replays_;
  return outs;
}

}  // namespace torchtpu::aten
