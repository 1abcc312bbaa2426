#include "aten/runtime/generator.h"

#include <ATen/core/GeneratorForPrivateuseone.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>

#include "aten/runtime/device.h"

namespace torchtpu::aten {
namespace {

constexpr size_t kStateBytes = 2 * sizeof(uint64_t);

// SplitMix64's finaliser: nearby seeds (0, 1, 2, ...) become unrelated keys.
uint64_t MixSeed(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

struct Defaults {
  std::mutex mutex;
  uint64_t seed = c10::default_rng_seed_val;  // for default generators created later
  std::deque<at::Generator> generators;       // index = device; deque keeps references valid
};

Defaults& TheDefaults() {
  static Defaults* d = new Defaults();  // never destroyed: generators outlive static teardown
  return *d;
}

int ResolveIndex(int index) {
  if (index < 0) index = CurrentDevice();
  int count = DeviceCount();
  TORCH_CHECK(index < count, "torchtpu: invalid device index ", index, " (", count, " tpu devices)");
  return index;
}

}  // namespace

TpuGenerator::TpuGenerator(c10::DeviceIndex device, uint64_t seed)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(seed) {}

void TpuGenerator::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

uint64_t TpuGenerator::seed() {
  uint64_t s = c10::detail::getNonDeterministicRandom();
  set_current_seed(s);
  return s;
}

void TpuGenerator::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  TORCH_CHECK(new_state.numel() == static_cast<int64_t>(kStateBytes),
              "RNG state is wrong size: expected ", kStateBytes, " bytes, got ", new_state.numel());
  TORCH_CHECK(new_state.is_contiguous(), "RNG state must be contiguous");
  uint64_t words[2];
  std::memcpy(words, new_state.data(), kStateBytes);
  seed_ = words[0];
  offset_ = words[1];
}

c10::intrusive_ptr<c10::TensorImpl> TpuGenerator::get_state() const {
  at::Tensor state = at::empty({static_cast<int64_t>(kStateBytes)}, at::TensorOptions().dtype(at::kByte));
  uint64_t words[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), words, kStateBytes);
  return state.getIntrusivePtr();
}

uint64_t TpuGenerator::Advance(uint64_t count) {
  uint64_t start = offset_;
  // Whole blocks of 4, as PyTorch's Philox offsets: a range never shares a
  // counter with the next one, whatever the bit width drawn.
  offset_ += (count + 3) / 4 * 4;
  return start;
}

TpuGenerator* TpuGenerator::clone_impl() const {
  auto* g = new TpuGenerator(device_.index(), seed_);
  g->offset_ = offset_;
  return g;
}

const at::Generator& DefaultGenerator(int index) {
  index = ResolveIndex(index);
  Defaults& d = TheDefaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  while (static_cast<int>(d.generators.size()) <= index) {
    auto device = static_cast<c10::DeviceIndex>(d.generators.size());
    d.generators.push_back(at::make_generator<TpuGenerator>(device, d.seed));
  }
  return d.generators[index];
}

at::Generator NewGenerator(int index) {
  return at::make_generator<TpuGenerator>(static_cast<c10::DeviceIndex>(ResolveIndex(index)));
}

void ManualSeedAll(uint64_t seed) {
  Defaults& d = TheDefaults();
  std::lock_guard<std::mutex> lock(d.mutex);
  d.seed = seed;
  for (at::Generator& g : d.generators) {
    std::lock_guard<std::mutex> glock(g.mutex());
    g.set_current_seed(seed);
  }
}

namespace {
std::atomic<uint64_t> g_draws{0};
}  // namespace

uint64_t DrawCount() { return g_draws.load(); }

RngDraw Draw(const std::optional<at::Generator>& gen, int device, uint64_t count) {
  g_draws.fetch_add(1);
  at::Generator g = gen.has_value() && gen->defined() ? *gen : DefaultGenerator(device);
  TORCH_CHECK(g.device().type() == TpuGenerator::device_type(), "Expected a '",
              TpuGenerator::device_type(), "' device type for generator but found '", g.device().type(), "'");
  auto* impl = g.get<TpuGenerator>();
  std::lock_guard<std::mutex> lock(impl->mutex_);
  RngDraw draw;
  draw.key = static_cast<int64_t>(MixSeed(impl->current_seed()));
  draw.counter = static_cast<int64_t>(impl->Advance(count));
  return draw;
}

}  // namespace torchtpu::aten
