// The tpu random number generators: one default generator per device (what
// torch.manual_seed reseeds) plus any torch.Generator("tpu"). A generator is
// only a (seed, offset) pair on the host; kernels reserve a range of the
// stream and pass its key and counter to the program as runtime scalars, so
// a new seed or offset never compiles a new program.
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <cstdint>
#include <optional>

namespace torchtpu::aten {

class TpuGenerator final : public c10::GeneratorImpl {
 public:
  explicit TpuGenerator(c10::DeviceIndex device, uint64_t seed = c10::default_rng_seed_val);

  // A new seed restarts the stream (offset 0), as in PyTorch's generators.
  void set_current_seed(uint64_t seed) override;
  uint64_t current_seed() const override { return seed_; }
  // Reseeds non-deterministically and returns the new seed.
  uint64_t seed() override;
  void set_offset(uint64_t offset) override { offset_ = offset; }
  uint64_t get_offset() const override { return offset_; }
  // The state is a CPU uint8 tensor of 16 bytes: seed, then offset (native order).
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;

  // Returns the offset where a draw of `count` values starts and moves the
  // offset past it. The caller holds mutex_.
  uint64_t Advance(uint64_t count);

  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

 private:
  TpuGenerator* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// Device `index`'s default generator (index -1: the current device).
const at::Generator& DefaultGenerator(int index);
// A fresh generator for device `index` (-1: the current device).
at::Generator NewGenerator(int index);
// Seeds every default generator, also those not created yet, without starting
// the runtime (torch.manual_seed calls this even in programs that never use tpu).
void ManualSeedAll(uint64_t seed);

// Where a kernel's random values come from: the Threefry key and the first
// counter of a reserved, non-overlapping range of the generator's stream.
struct RngDraw {
  int64_t key = 0;
  int64_t counter = 0;
};
// Reserves `count` values from `gen` (or the default generator of `device`).
RngDraw Draw(const std::optional<at::Generator>& gen, int device, uint64_t count);
// How many draws the process has made: a captured graph that drew random
// values bakes its key into the program's arguments, so it is not replayed.
uint64_t DrawCount();

}  // namespace torchtpu::aten
