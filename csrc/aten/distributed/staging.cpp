#include "aten/distributed/staging.h"

namespace torchtpu::aten::distributed {
namespace {

bool OnTpu(const at::Tensor& t) { return t.defined() && t.device().is_privateuseone(); }

}  // namespace

at::Tensor Staging::In(const at::Tensor& t) {
  if (!enabled_ || !OnTpu(t)) return t;
  // Contiguous, as the wire needs; a non-contiguous view is read as a view.
  return t.to(at::kCPU).contiguous();
}

std::vector<at::Tensor> Staging::In(const std::vector<at::Tensor>& ts) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(In(t));
  return out;
}

std::vector<std::vector<at::Tensor>> Staging::In(const std::vector<std::vector<at::Tensor>>& ts) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(In(t));
  return out;
}

at::Tensor Staging::Out(const at::Tensor& t, bool with_contents) {
  if (!enabled_ || !OnTpu(t)) return t;
  at::Tensor host = with_contents ? t.to(at::kCPU).contiguous()
                                  : at::empty(t.sizes(), t.options().device(at::kCPU));
  writebacks_.emplace_back(t, host);
  return host;
}

std::vector<at::Tensor> Staging::Out(const std::vector<at::Tensor>& ts, bool with_contents) {
  std::vector<at::Tensor> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(Out(t, with_contents));
  return out;
}

std::vector<std::vector<at::Tensor>> Staging::Out(const std::vector<std::vector<at::Tensor>>& ts,
                                                  bool with_contents) {
  std::vector<std::vector<at::Tensor>> out;
  out.reserve(ts.size());
  for (const auto& t : ts) out.push_back(Out(t, with_contents));
  return out;
}

void Staging::WriteBack() {
  for (auto& [device, host] : writebacks_) device.copy_(host);
  writebacks_.clear();
}

}  // namespace torchtpu::aten::distributed
