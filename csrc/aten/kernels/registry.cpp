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
// selection.cpp: median, nanmedian, kthvalue, mode, nansum.
void RegisterSelection();
// distance.cpp: _cdist_forward/_backward, _pdist_forward/_backward, renorm, norm.out.
void RegisterDistance();
// masked_put.cpp: masked_scatter_, put_.
void RegisterMaskedPut();
// special.cpp: gcd/lcm, heaviside, nextafter, frexp, logit and the special functions.
void RegisterSpecial();
// linalg_composite.cpp: trace, vdot, addbmm, linalg_cross, channel_shuffle over native ops.
void RegisterLinalgComposites();
// pad.cpp: reflection_pad and replication_pad 1d/2d/3d and their backward ops.
void RegisterPadding();
// data_dependent.cpp: bincount, unique, unique_consecutive, repeat_interleave
// (one host read each for the output's length, as CUDA).
void RegisterDataDependent();
// linalg_factor.cpp: Cholesky, triangular solves and what builds on them.
void RegisterLinalgFactor();
void RegisterLinalgDecomp();
void RegisterMatrixExp();
void RegisterSegmentReduce();
void RegisterHistogram();
// weight_norm.cpp: _weight_norm_interface and its backward.
void RegisterWeightNorm();
// fold.cpp: im2col and col2im (unfold / fold).
void RegisterFold();
// upsample_separable.cpp: nearest(-exact) 1-3d, linear, trilinear, bicubic, antialiased, as per-axis taps.
void RegisterUpsampleSeparable();
// grid_sampler.cpp: grid_sampler_2d/3d and their backward ops.
void RegisterGridSampler();
// pool_window.cpp: 3-D max/avg/adaptive-avg pools and adaptive max pools, by separable windows.
void RegisterPoolWindow();
// unpool_margin.cpp: max_unpool2d/3d, multi_margin_loss, multilabel_margin_loss.
void RegisterUnpoolMargin();
// complex.cpp: torch.complex, torch.polar, conj_physical (dtype work of issue 14).
void RegisterComplex();
void RegisterFft();
void RegisterCtcLoss();
void RegisterFractionalPool();
void RegisterLinalgLdl();
// linalg_eig.cpp
void RegisterLinalgEig();
// rnn_cell.cpp: the fused LSTM and GRU cells every recurrent layer calls on PrivateUse1.
void RegisterRnnCells();

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
  RegisterSpecial();
  RegisterLinalgComposites();
  RegisterPadding();
  RegisterDataDependent();
  RegisterLinalgFactor();
  RegisterLinalgDecomp();
  RegisterMatrixExp();
  RegisterSegmentReduce();
  RegisterHistogram();
  RegisterWeightNorm();
  RegisterFold();
  RegisterUpsampleSeparable();
  RegisterGridSampler();
  RegisterPoolWindow();
  RegisterUnpoolMargin();
  RegisterComplex();
  RegisterFft();
  RegisterCtcLoss();
  RegisterFractionalPool();
  RegisterLinalgLdl();
  RegisterLinalgEig();
  RegisterRnnCells();
}

}  // namespace torchtpu::aten
