#include "aten/kernels/registry.h"

namespace torchtpu::aten {

// paged_attention.cpp: the torch.ops.torchtpu paged KV cache ops of serving.
void RegisterPagedAttention();
// histc_isin.cpp: histc and isin.
void RegisterHistcIsin();
// scatter_reduce.cpp: scatter_reduce and index_reduce.
void RegisterScatterReduce();
// cumulative_search.cpp: cummax/cummin, logcumsumexp, searchsorted, bucketize.
void RegisterCumulativeSearch();
// selection.cpp: median, nanmedian, kthvalue, mode, nansum; distance.cpp: cdist, pdist, renorm; masked_scatter, put.
void RegisterSelection();
void RegisterDistance();
void RegisterMaskedPut();

torch::Library& AtenLibrary() {
  static torch::Library lib(torch::Library::IMPL, "aten", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  return lib;
}

std::vector<std::string>& SkippedOps() {
  static std::vector<std::string> skipped;
  return skipped;
}

void RegisterAllOps() {
  static bool done = false;
  if (done) return;
  done = true;
  RegisterCreation();
  RegisterElementwise();
  RegisterReductions();
  RegisterLinalg();
  RegisterShapeOps();
  RegisterIndexing();
  RegisterRandom();
  RegisterSort();
  RegisterNN();
  RegisterConvPool();
  RegisterAutocast();
  RegisterPagedAttention();
  RegisterHistcIsin();
  RegisterScatterReduce();
  RegisterCumulativeSearch();
  RegisterSelection();
  RegisterDistance();
  RegisterMaskedPut();
}

}  // namespace torchtpu::aten
