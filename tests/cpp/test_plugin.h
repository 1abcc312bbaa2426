// The CPU plugin and a shared client for the C++ tests.
#pragma once

#include <cstdlib>
#include <memory>

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

}  // namespace testing_plugin
