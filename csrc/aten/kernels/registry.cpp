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
}

}  // namespace torchtpu::aten
