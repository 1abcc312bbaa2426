#include "aten/distributed/staging.h"

#include "aten/distributed/host_pool.h"
#include "aten/runtime/host_alias.h"

namespace torchtpu::aten::distributed {
namespace {

bool OnTpu(const at::Tensor& t) { return t.defined() && t.device().is_privateuseone(); }

}  // namespace

Staging::~Staging() {
  HostPool& pool = HostPool::Get();
  for (const auto& host : inputs_) pool.Give(host);
  // Results not written back (the collective failed) are free as well.
  for (const auto& [device, host] : writebacks_) pool.Give(host);
}

at::Tensor Staging::HostCopy(const at::Tensor& t) {
  // Contiguous, as the wire needs; copy_ reads a non-contiguous view as a
  // view and resolves conj/neg bits.
  at::Tensor host = HostPool::Get().Take(t.sizes(), t.scalar_type());
  host.copy_(t);
  return host;
}

at::Tensor Staging::In(const at::Tensor& t) {
  if (!enabled_ || !OnTpu(t)) return t;
  at::Tensor host = HostCopy(t);
  inputs_.push_back(host);
  return host;
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
  at::Tensor host = with_contents ? HostCopy(t) : HostPool::Get().Take(t.sizes(), t.scalar_type());
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
  HostPool& pool = HostPool::Get();
  // Taken out first: if a write fails part-way, the blocks not handed back
  // yet are simply freed, and none is handed back twice.
  std::vector<std::pair<at::Tensor, at::Tensor>> todo;
  todo.swap(writebacks_);
  for (auto& [device, host] : todo) {
    if (auto released = WriteByLendingHost(device, host)) {
      pool.GiveWhen(*released, host);
    } else {
      device.copy_(host);
      pool.Give(host);
    }
  }
}

}  // namespace torchtpu::aten::distributed
