// Autocast for the tpu device: torch.autocast("tpu", dtype=torch.bfloat16)
// runs matmuls and convolutions in the lower precision, and the ops that need
// range or accuracy (reductions, softmax, norms, losses, transcendental
// functions) in float32 — the same per-op policy PyTorch applies on CUDA,
// taken from its shared lists in ATen/autocast_mode.h.
#include <ATen/autocast_mode.h>
#include <torch/library.h>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {

void RegisterAutocast() {
  static bool done = false;
  if (done) return;
  done = true;
  // Ops without a policy pass straight through autocast.
  static torch::Library all(torch::Library::IMPL, "_", c10::DispatchKey::AutocastPrivateUse1, __FILE__, __LINE__);
  all.fallback(torch::CppFunction::makeFallthrough());
  static torch::Library m(torch::Library::IMPL, "aten", c10::DispatchKey::AutocastPrivateUse1, __FILE__, __LINE__);
  try {
#define TORCHTPU_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TORCHTPU_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TORCHTPU_FP32_OPT_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TORCHTPU_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
    AT_FORALL_LOWER_PRECISION_FP(TORCHTPU_LOWER)
    AT_FORALL_FP32(TORCHTPU_FP32)
    AT_FORALL_FP32_SET_OPT_DTYPE(TORCHTPU_FP32_OPT_DTYPE)
    AT_FORALL_PROMOTE(TORCHTPU_PROMOTE)
    // The FFTs run in float32, as under CPU autocast (whose list, unlike the
    // shared CUDA one above, has them): ATen's FFT front end rejects
    // bfloat16, so FNet's bf16 forward failed on tpu and passed on the CPU.
    TORCHTPU_FP32(fft_fft)
    TORCHTPU_FP32(fft_ifft)
    TORCHTPU_FP32(fft_fft2)
    TORCHTPU_FP32(fft_ifft2)
    TORCHTPU_FP32(fft_fftn)
    TORCHTPU_FP32(fft_ifftn)
    TORCHTPU_FP32(fft_rfft)
    TORCHTPU_FP32(fft_irfft)
    TORCHTPU_FP32(fft_rfft2)
    TORCHTPU_FP32(fft_irfft2)
    TORCHTPU_FP32(fft_rfftn)
    TORCHTPU_FP32(fft_irfftn)
    TORCHTPU_FP32(fft_hfft)
    TORCHTPU_FP32(fft_ihfft)
#undef TORCHTPU_LOWER
#undef TORCHTPU_FP32
#undef TORCHTPU_FP32_OPT_DTYPE
#undef TORCHTPU_PROMOTE
  } catch (const c10::Error& e) {
    SkippedOps().push_back(std::string("autocast: ") + e.what_without_backtrace());
  }
}

}  // namespace torchtpu::aten
