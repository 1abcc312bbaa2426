// The CPU plugin and a shared client for the C++ tests.
#pragma once

#include <cstdlib>
#include <memory>
#include <vector>

#include "pjrt/pjrt.h"

namespace testing_plugin {

inline std::shared_ptr<torchtpu::pjrt::Plugin> Plugin() {
  static auto plugin = [] {
    const char* env = std::getenv("TORCHTPU_CPU_PLUGIN");
    return torchtpu::pjrt::Plugin::Load(env ? env : TORCHTPU_CPU_PLUGIN);
  }();
  return plugin;
}

inline std::shared_ptr<torchtpu::pjrt::Client> Client() {
  static auto client = torchtpu::pjrt::Client::Create(Plugin(), {{"cpu_device_count", int64_t{2}}});
  return client;
}

// A rank-1 f32 buffer on device 0 with `data`.
inline std::unique_ptr<torchtpu::pjrt::Buffer> Upload(const std::vector<float>& data) {
  auto c = Client();
  return c->BufferFromHost(data.data(), torchtpu::pjrt::ElementType::kF32,
                           {static_cast<int64_t>(data.size())}, c->devices()[0]);
}

// The first `n` elements of a buffer, read back as T.
template <typename T = float>
std::vector<T> Download(torchtpu::pjrt::Buffer& b, size_t n) {
  std::vector<T> out(n);
  b.ToHost(out.data(), n * sizeof(T));
  return out;
}

}  // namespace testing_plugin
