#include "aten/runtime/host_alias.h"

#include "aten/runtime/dtype.h"
#include "aten/runtime/runtime.h"
#include "aten/runtime/storage.h"

namespace torchtpu::aten {

std::unique_ptr<pjrt::Event> WriteByLendingHost(const at::Tensor& dst, const at::Tensor& host) {
  if (!dst.device().is_privateuseone() || !host.device().is_cpu()) return nullptr;
  if (dst.scalar_type() != host.scalar_type() || dst.sizes() != host.sizes() || dst.numel() == 0) return nullptr;
  if (!dst.is_contiguous() || !host.is_contiguous() || dst.storage_offset() != 0) return nullptr;
  if (dst.is_conj() || dst.is_neg() || host.is_conj() || host.is_neg()) return nullptr;
  StorageData& storage = StorageOf(dst);
  if (storage.nbytes != dst.nbytes()) return nullptr;  // dst is part of a larger storage
  const hlo::DType dtype = ToHlo(dst.scalar_type());
  Runtime& rt = Runtime::Get();
  std::unique_ptr<pjrt::Event> released;
  auto buffer = rt.client().BufferAliasingHost(host.data_ptr(), ToPjrt(dtype), {host.numel()},
                                               rt.device(storage.device), &released);
  SetBuffer(storage, std::shared_ptr<pjrt::Buffer>(std::move(buffer)), dtype);
  return released;
}

}  // namespace torchtpu::aten
