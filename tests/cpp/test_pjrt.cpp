// Tests for csrc/pjrt against the real CPU plugin (xla-cpu-pjrt).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "pjrt/pjrt.h"

#ifndef TORCHTPU_CPU_PLUGIN
#error "TORCHTPU_CPU_PLUGIN must name xla_cpu_pjrt.so"
#endif

namespace pjrt = torchtpu::pjrt;

namespace {

const char* PluginPath() {
  const char* env = std::getenv("TORCHTPU_CPU_PLUGIN");
  return (env && *env) ? env : TORCHTPU_CPU_PLUGIN;
}

std::shared_ptr<pjrt::Plugin> CpuPlugin() {
  static std::shared_ptr<pjrt::Plugin> plugin = pjrt::Plugin::Load(PluginPath());
  return plugin;
}

// One two-device client shared by the tests (client creation spawns threads).
std::shared_ptr<pjrt::Client> CpuClient() {
  static std::shared_ptr<pjrt::Client> client =
      pjrt::Client::Create(CpuPlugin(), {{"cpu_device_count", int64_t{2}}});
  return client;
}

std::string SitePackagesOf(const std::string& plugin_path) {
  // .../site-packages/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so
  char resolved[PATH_MAX];
  std::string p = ::realpath(plugin_path.c_str(), resolved) ? resolved : plugin_path;
  for (int i = 0; i < 3; ++i) p = p.substr(0, p.rfind('/'));
  return p;
}

template <typename T>
std::vector<T> RoundTrip(pjrt::Client& client, const std::vector<T>& host, pjrt::ElementType type,
                         const std::vector<int64_t>& dims, PJRT_Device* device = nullptr) {
  auto buf = client.BufferFromHost(host.data(), type, dims, device ? device : client.devices()[0]);
  EXPECT_EQ(buf->element_type(), type);
  EXPECT_EQ(buf->dims(), dims);
  std::vector<T> out(host.size());
  buf->ToHost(out.data(), out.size() * sizeof(T));
  return out;
}

const char kAddModule[] = R"(
module @m {
  func.func public @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.add %a, %b : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
)";

const char kDonatingModule[] = R"(
module @m {
  func.func public @main(%a: tensor<2x3xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<2x3xf32>
    func.return %0 : tensor<2x3xf32>
  }
}
)";

std::vector<float> RunAdd(pjrt::Client& client, pjrt::Executable& exe, PJRT_Device* device,
                          PJRT_Device** out_device = nullptr) {
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30, 40, 50, 60};
  auto ba = client.BufferFromHost(a.data(), pjrt::ElementType::kF32, {2, 3}, device);
  auto bb = client.BufferFromHost(b.data(), pjrt::ElementType::kF32, {2, 3}, device);
  pjrt::ExecuteResult r = exe.Execute({{ba.get(), bb.get()}});
  EXPECT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.done.size(), 1u);
  EXPECT_EQ(r.outputs[0].size(), 1u);
  r.done[0]->Await();
  std::vector<float> out(6);
  r.outputs[0][0]->ToHost(out.data(), out.size() * sizeof(float));
  if (out_device) *out_device = r.outputs[0][0]->device();
  return out;
}

const std::vector<float> kAddExpected = {11, 22, 33, 44, 55, 66};

}  // namespace

// ------------------------------------------------------------------ plugin --

TEST(PjrtPlugin, LoadVersionAttributes) {
  auto plugin = CpuPlugin();
  ASSERT_NE(plugin->api(), nullptr);
  EXPECT_EQ(plugin->api_major(), 0);
  EXPECT_GE(plugin->api_minor(), 81);
  EXPECT_EQ(plugin->path(), PluginPath());
  // Loading again gives the same object (PJRT_Plugin_Initialize ran once).
  EXPECT_EQ(pjrt::Plugin::Load(PluginPath()).get(), plugin.get());
  EXPECT_FALSE(plugin->HasFunction(size_t{1} << 20));
  auto attrs = plugin->Attributes();
  EXPECT_TRUE(attrs.count("xla_version")) << "attributes: " << attrs.size();
  ASSERT_TRUE(attrs.count("stablehlo_current_version"));
  // int64 lists are joined with '.', e.g. "1.9.5".
  EXPECT_NE(attrs["stablehlo_current_version"].find('.'), std::string::npos);
  for (const auto& [k, v] : attrs) std::printf("  attribute %s = %s\n", k.c_str(), v.c_str());
}

TEST(PjrtPlugin, LoadMissingFileThrowsPluginError) {
  EXPECT_THROW(pjrt::Plugin::Load("/nonexistent/libnothing.so"), pjrt::PluginError);
}

TEST(PjrtPlugin, ResolvePluginPath) {
  const std::string root = SitePackagesOf(PluginPath());
  EXPECT_EQ(pjrt::ResolvePluginPath("cpu", {"/nonexistent", root}),
            root + "/xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so");
  EXPECT_EQ(pjrt::ResolvePluginPath(PluginPath(), {}), PluginPath());
  EXPECT_EQ(pjrt::PluginLocationFor("tpu").install_hint, "pip install libtpu");
}

TEST(PjrtPlugin, ResolvePluginPathErrorsNameThePipPackage) {
  auto message_of = [](const std::string& what, std::vector<std::string> roots) -> std::string {
    try {
      pjrt::ResolvePluginPath(what, roots);
    } catch (const pjrt::PluginError& e) {
      return e.what();
    }
    return "<no error>";
  };
  std::string cpu = message_of("cpu", {"/nonexistent-root"});
  EXPECT_NE(cpu.find("pip install xla-cpu-pjrt"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("/nonexistent-root"), std::string::npos) << cpu;
  std::string cuda = message_of("cuda", {"/nonexistent-root"});
  EXPECT_NE(cuda.find("pip install jax-cuda13-pjrt"), std::string::npos) << cuda;
  std::string tpu = message_of("tpu", {});
  EXPECT_NE(tpu.find("pip install libtpu"), std::string::npos) << tpu;
  std::string unknown = message_of("quantum", {"/"});
  EXPECT_NE(unknown.find("cpu"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("cuda"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("tpu"), std::string::npos) << unknown;
  std::string path = message_of("/nonexistent/plugin.so", {});
  EXPECT_NE(path.find("/nonexistent/plugin.so"), std::string::npos) << path;
  EXPECT_NE(message_of("plugin.so", {}), "<no error>");
}

// --------------------------------------------------------- compile options --

TEST(PjrtCompileOptions, DefaultBytes) {
  EXPECT_EQ(pjrt::CompileOptions{}.Serialize(), std::string("\x1A\x04\x20\x01\x28\x01", 6));
}

TEST(PjrtCompileOptions, FieldsAndDeviceAssignment) {
  pjrt::CompileOptions o;
  o.device_ordinal = 1;
  EXPECT_EQ(o.Serialize(), std::string("\x1A\x06\x08\x01\x20\x01\x28\x01", 8));
  o = {};
  o.device_assignment = {1};
  // 4A 09: device_assignment{ 08 01 (replica_count) 10 01 (computation_count)
  //   1A 03 { 0A 01 01 } (computation 0: replica 0 on device 1) }
  EXPECT_EQ(o.Serialize(),
            std::string("\x1A\x0F\x20\x01\x28\x01\x4A\x09\x08\x01\x10\x01\x1A\x03\x0A\x01\x01", 17));
  o = {};
  o.num_partitions = 2;
  o.use_spmd_partitioning = true;
  o.device_assignment = {0, 1};
  EXPECT_EQ(o.Serialize(),
            std::string("\x1A\x16\x20\x01\x28\x02\x30\x01\x4A\x0E\x08\x01\x10\x02"
                        "\x1A\x03\x0A\x01\x00\x1A\x03\x0A\x01\x01", 24));
  o.device_assignment = {0};
  EXPECT_THROW(o.Serialize(), pjrt::Error);
  o = {};
  o.num_replicas = 0;
  EXPECT_THROW(o.Serialize(), pjrt::Error);
}

// ------------------------------------------------------------------ client --

TEST(PjrtClient, TwoCpuDevices) {
  auto client = CpuClient();
  ASSERT_EQ(client->devices().size(), 2u);
  EXPECT_EQ(client->device_id(client->devices()[0]), 0);
  EXPECT_EQ(client->device_id(client->devices()[1]), 1);
  EXPECT_FALSE(client->device_kind(client->devices()[0]).empty());
  EXPECT_EQ(client->platform_name(), "cpu");
  EXPECT_FALSE(client->platform_version().empty());
  int64_t in_use = -2, limit = -2;
  // The CPU plugin does not implement PJRT_Device_MemoryStats.
  EXPECT_FALSE(client->MemoryStats(client->devices()[0], &in_use, &limit));
}

TEST(PjrtClient, DefaultOptionsAndSecondClient) {
  auto client = pjrt::Client::Create(CpuPlugin(), {{"cpu_device_count", int64_t{1}}});
  EXPECT_EQ(client->devices().size(), 1u);
}

// ------------------------------------------------------------------ buffer --

TEST(PjrtBuffer, RoundTripF32) {
  auto client = CpuClient();
  std::vector<float> v = {1.5f, -2.f, 3.25f, 0.f, 1e30f, -7.f};
  EXPECT_EQ(RoundTrip(*client, v, pjrt::ElementType::kF32, {2, 3}), v);
}

TEST(PjrtBuffer, RoundTripS64) {
  auto client = CpuClient();
  std::vector<int64_t> v = {INT64_MIN, -1, 0, 1, INT64_MAX};
  EXPECT_EQ(RoundTrip(*client, v, pjrt::ElementType::kS64, {5}), v);
}

TEST(PjrtBuffer, RoundTripPred) {
  auto client = CpuClient();
  std::vector<uint8_t> v = {1, 0, 0, 1};
  EXPECT_EQ(RoundTrip(*client, v, pjrt::ElementType::kPred, {2, 2}), v);
}

TEST(PjrtBuffer, RoundTripBF16Raw) {
  auto client = CpuClient();
  // 1.0, -2.0, +inf, 0x7fc0 (NaN), smallest subnormal
  std::vector<uint16_t> v = {0x3f80, 0xc000, 0x7f80, 0x7fc0, 0x0001, 0x8000};
  EXPECT_EQ(RoundTrip(*client, v, pjrt::ElementType::kBF16, {3, 1, 2}), v);
}

TEST(PjrtBuffer, RoundTripRank0) {
  auto client = CpuClient();
  std::vector<double> v = {3.141592653589793};
  EXPECT_EQ(RoundTrip(*client, v, pjrt::ElementType::kF64, {}), v);
}

TEST(PjrtBuffer, ZeroElementBuffers) {
  auto client = CpuClient();
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, std::vector<int64_t>{2, 0, 3}}) {
    auto buf = client->BufferFromHost(nullptr, pjrt::ElementType::kF32, dims, client->devices()[0]);
    EXPECT_EQ(buf->dims(), dims);
    EXPECT_EQ(buf->element_type(), pjrt::ElementType::kF32);
    buf->AwaitReady();
    buf->ToHost(nullptr, 0);
    float dummy = 0;
    EXPECT_THROW(buf->ToHost(&dummy, sizeof(dummy)), pjrt::Error);
  }
}

TEST(PjrtBuffer, MetadataAndSizeMismatch) {
  auto client = CpuClient();
  std::vector<int32_t> v(12, 7);
  auto buf = client->BufferFromHost(v.data(), pjrt::ElementType::kS32, {3, 4}, client->devices()[1]);
  EXPECT_EQ(buf->device(), client->devices()[1]);
  EXPECT_GE(buf->on_device_size(), 48u);
  EXPECT_FALSE(buf->IsDeleted());
  buf->AwaitReady();
  std::vector<int32_t> too_big(13);
  try {
    buf->ToHost(too_big.data(), too_big.size() * 4);
    FAIL() << "expected a size mismatch error";
  } catch (const pjrt::Error& e) {
    EXPECT_EQ(e.code(), pjrt::ErrorCode::kInvalidArgument);
  }
  auto ev = buf->ToHostAsync(too_big.data(), 48);
  ev->Await();
  EXPECT_TRUE(ev->IsReady());
  EXPECT_EQ(std::vector<int32_t>(too_big.begin(), too_big.begin() + 12), v);
}

TEST(PjrtBuffer, InvalidElementTypeThrowsInsteadOfAborting) {
  auto client = CpuClient();
  float x = 0;
  try {
    client->BufferFromHost(&x, static_cast<pjrt::ElementType>(99), {}, client->devices()[0]);
    FAIL() << "expected pjrt::Error";
  } catch (const pjrt::Error& e) {
    EXPECT_EQ(e.code(), pjrt::ErrorCode::kInvalidArgument);
  }
}

TEST(PjrtBuffer, AsyncFromHostWithDoneEvent) {
  auto client = CpuClient();
  std::vector<float> v(1024);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  std::unique_ptr<pjrt::Event> done;
  auto buf = client->BufferFromHost(v.data(), pjrt::ElementType::kF32, {32, 32},
                                    client->devices()[0], &done);
  ASSERT_NE(done, nullptr);
  done->Await();  // host memory may be reused from here on
  EXPECT_TRUE(done->IsReady());
  std::vector<float> out(v.size());
  buf->ToHost(out.data(), out.size() * sizeof(float));
  EXPECT_EQ(out, v);
}

// 64-byte aligned host memory, as PyTorch's CPU allocator hands out.
struct AlignedFloats {
  explicit AlignedFloats(size_t n) : n(n), p(static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)))) {}
  ~AlignedFloats() { std::free(p); }
  size_t n;
  float* p;
};

TEST(PjrtBuffer, AliasingHostReleasesTheMemoryWhenTheBufferGoes) {
  auto client = CpuClient();
  AlignedFloats host(4096);
  for (size_t i = 0; i < host.n; ++i) host.p[i] = static_cast<float>(i) * 0.5f;
  std::unique_ptr<pjrt::Event> released;
  auto buf = client->BufferAliasingHost(host.p, pjrt::ElementType::kF32, {64, 64}, client->devices()[0], &released);
  ASSERT_NE(released, nullptr);
  // The CPU plugin uses the memory itself (zero copy): it is not released
  // while the buffer lives. The staging pool (aten/distributed) relies only
  // on the event, so a plugin that copies is correct too.
  EXPECT_FALSE(released->IsReady());
  std::vector<float> out(host.n);
  buf->ToHost(out.data(), out.size() * sizeof(float));
  EXPECT_EQ(out, std::vector<float>(host.p, host.p + host.n));
  buf.reset();
  released->Await();
  EXPECT_TRUE(released->IsReady());
}

TEST(PjrtBuffer, AliasingHostCallbackOutlivesItsEvent) {
  // The staging pool registers OnReady and drops the Event at once: the
  // callback must still run when the buffer goes.
  auto client = CpuClient();
  AlignedFloats host(256);
  for (size_t i = 0; i < host.n; ++i) host.p[i] = 1.0f;
  std::unique_ptr<pjrt::Event> released;
  auto buf = client->BufferAliasingHost(host.p, pjrt::ElementType::kF32, {256}, client->devices()[0], &released);
  std::atomic<bool> ran{false};
  released->OnReady([&ran](bool ok) { ran = ok; });
  released.reset();
  EXPECT_FALSE(ran.load());
  buf.reset();
  for (int i = 0; i < 1000 && !ran.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(ran.load());
}

TEST(PjrtBuffer, AliasedBufferCanBeDonated) {
  auto client = CpuClient();
  auto exe = client->Compile(kDonatingModule, pjrt::CompileOptions{});
  PJRT_Device* dev = client->devices()[0];
  AlignedFloats a(6);
  for (size_t i = 0; i < 6; ++i) a.p[i] = static_cast<float>(i + 1);
  std::vector<float> b = {2, 2, 2, 2, 2, 2};
  std::unique_ptr<pjrt::Event> released;
  auto ba = client->BufferAliasingHost(a.p, pjrt::ElementType::kF32, {2, 3}, dev, &released);
  auto bb = client->BufferFromHost(b.data(), pjrt::ElementType::kF32, {2, 3}, dev);
  auto r = exe->Execute({{ba.get(), bb.get()}});
  r.done[0]->Await();
  std::vector<float> out(6);
  r.outputs[0][0]->ToHost(out.data(), 24);
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8, 10, 12}));
  // Whoever ends up holding the memory, it is released once every buffer is gone.
  ba.reset();
  r.outputs.clear();
  released->Await();
}

// Flat buffers (rank 0 and 1) on the CPU plugin are read where they lie in
// host memory (buffer.cpp, ReadHostMemory); shaped ones, as in the tests
// above, through PJRT_Buffer_ToHostBuffer. The direct read must keep every
// guarantee of the PJRT copy: it waits for the producer, refuses a wrong
// size and raises for a donated buffer.
const char kFlatDonatingModule[] = R"(
module @m {
  func.func public @main(%a: tensor<6xf32> {tf.aliasing_output = 0 : i32}, %b: tensor<6xf32>) -> tensor<6xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<6xf32>
    %1 = stablehlo.add %0, %b : tensor<6xf32>
    func.return %1 : tensor<6xf32>
  }
}
)";

TEST(PjrtBuffer, FlatReadWaitsForTheProducer) {
  auto client = CpuClient();
  auto exe = client->Compile(kFlatDonatingModule, pjrt::CompileOptions{});
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {2, 2, 2, 2, 2, 2};
  PJRT_Device* dev = client->devices()[0];
  for (int i = 0; i < 20; ++i) {
    auto ba = client->BufferFromHost(a.data(), pjrt::ElementType::kF32, {6}, dev);
    auto bb = client->BufferFromHost(b.data(), pjrt::ElementType::kF32, {6}, dev);
    auto r = exe->Execute({{ba.get(), bb.get()}}, /*non_donatable=*/{0});
    // No Await on r.done: the read itself must wait for the result.
    std::vector<float> out(6);
    r.outputs[0][0]->ToHost(out.data(), 24);
    EXPECT_EQ(out, (std::vector<float>{4, 6, 8, 10, 12, 14}));
  }
}

TEST(PjrtBuffer, FlatReadOfWrongSizeOrDonatedBufferThrows) {
  auto client = CpuClient();
  PJRT_Device* dev = client->devices()[0];
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {2, 2, 2, 2, 2, 2};
  auto ba = client->BufferFromHost(a.data(), pjrt::ElementType::kF32, {6}, dev);
  std::vector<float> too_big(7), too_small(5);
  EXPECT_THROW(ba->ToHost(too_big.data(), 28), pjrt::Error);
  EXPECT_THROW(ba->ToHost(too_small.data(), 20), pjrt::Error);
  auto exe = client->Compile(kFlatDonatingModule, pjrt::CompileOptions{});
  auto bb = client->BufferFromHost(b.data(), pjrt::ElementType::kF32, {6}, dev);
  auto r = exe->Execute({{ba.get(), bb.get()}});
  r.done[0]->Await();
  ASSERT_TRUE(ba->IsDeleted());
  std::vector<float> out(6);
  EXPECT_THROW(ba->ToHost(out.data(), 24), pjrt::Error);
  r.outputs[0][0]->ToHost(out.data(), 24);
  EXPECT_EQ(out, (std::vector<float>{4, 6, 8, 10, 12, 14}));
}

TEST(PjrtBuffer, CopyToDevice) {
  auto client = CpuClient();
  std::vector<int16_t> v = {1, -2, 3, -4};
  auto b0 = client->BufferFromHost(v.data(), pjrt::ElementType::kS16, {4}, client->devices()[0]);
  auto b1 = b0->CopyToDevice(client->devices()[1]);
  EXPECT_EQ(b1->device(), client->devices()[1]);
  EXPECT_EQ(b1->element_type(), pjrt::ElementType::kS16);
  std::vector<int16_t> out(4);
  b1->ToHost(out.data(), 8);
  EXPECT_EQ(out, v);
}

// -------------------------------------------------------------- executable --

TEST(PjrtExecutable, CompileAndRun) {
  auto client = CpuClient();
  auto exe = client->Compile(kAddModule, pjrt::CompileOptions{});
  EXPECT_EQ(exe->num_outputs(), 1u);
  PJRT_Device* where = nullptr;
  EXPECT_EQ(RunAdd(*client, *exe, client->devices()[0], &where), kAddExpected);
  EXPECT_EQ(where, client->devices()[0]);
}

TEST(PjrtExecutable, Donation) {
  auto client = CpuClient();
  auto exe = client->Compile(kDonatingModule, pjrt::CompileOptions{});
  std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {2, 2, 2, 2, 2, 2};
  PJRT_Device* dev = client->devices()[0];
  {
    // Blocked by non_donatable: the input survives.
    auto ba = client->BufferFromHost(a.data(), pjrt::ElementType::kF32, {2, 3}, dev);
    auto bb = client->BufferFromHost(b.data(), pjrt::ElementType::kF32, {2, 3}, dev);
    auto r = exe->Execute({{ba.get(), bb.get()}}, /*non_donatable=*/{0});
    r.done[0]->Await();
    EXPECT_FALSE(ba->IsDeleted());
  }
  auto ba = client->BufferFromHost(a.data(), pjrt::ElementType::kF32, {2, 3}, dev);
  auto bb = client->BufferFromHost(b.data(), pjrt::ElementType::kF32, {2, 3}, dev);
  auto r = exe->Execute({{ba.get(), bb.get()}});
  r.done[0]->Await();
  EXPECT_TRUE(ba->IsDeleted());  // donated; still destroyed by ~Buffer
  EXPECT_FALSE(bb->IsDeleted());
  std::vector<float> out(6);
  r.outputs[0][0]->ToHost(out.data(), 24);
  EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8, 10, 12}));
}

TEST(PjrtExecutable, CompileErrorThrows) {
  auto client = CpuClient();
  try {
    client->Compile("module @m { func.func @main( this is not mlir", pjrt::CompileOptions{});
    FAIL() << "expected pjrt::Error";
  } catch (const pjrt::Error& e) {
    EXPECT_NE(e.code(), pjrt::ErrorCode::kOk);  // the CPU plugin says kUnknown
    EXPECT_NE(std::string(e.what()).find("error"), std::string::npos) << e.what();
  }
  // Type error in otherwise valid syntax.
  EXPECT_THROW(client->Compile(R"(
module @m {
  func.func public @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
})", pjrt::CompileOptions{}),
               pjrt::Error);
}

TEST(PjrtExecutable, SerializeDeserialize) {
  auto client = CpuClient();
  auto exe = client->Compile(kAddModule, pjrt::CompileOptions{});
  std::string bytes = exe->Serialize();
  EXPECT_FALSE(bytes.empty());
  auto loaded = client->Deserialize(bytes);
  EXPECT_EQ(loaded->num_outputs(), 1u);
  EXPECT_EQ(RunAdd(*client, *loaded, client->devices()[0]), kAddExpected);
  EXPECT_THROW(client->Deserialize("definitely not an executable"), pjrt::Error);
}

TEST(PjrtExecutable, RunOnDevice1ViaDeviceAssignment) {
  auto client = CpuClient();
  pjrt::CompileOptions options;
  options.device_assignment = {1};
  auto exe = client->Compile(kAddModule, options);
  PJRT_Device* where = nullptr;
  EXPECT_EQ(RunAdd(*client, *exe, client->devices()[1], &where), kAddExpected);
  EXPECT_EQ(where, client->devices()[1]);
  // The serialized form keeps the assignment.
  auto loaded = client->Deserialize(exe->Serialize());
  EXPECT_EQ(RunAdd(*client, *loaded, client->devices()[1], &where), kAddExpected);
  EXPECT_EQ(where, client->devices()[1]);
}

TEST(PjrtExecutable, ExecuteFromSeveralThreads) {
  auto client = CpuClient();
  auto exe = client->Compile(kAddModule, pjrt::CompileOptions{});
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) ok[t] += RunAdd(*client, *exe, client->devices()[0]) == kAddExpected;
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok, (std::vector<int>{10, 10, 10, 10}));
}

TEST(PjrtExecutable, MultipleOutputsAndNoArgs) {
  auto client = CpuClient();
  auto exe = client->Compile(R"(
module @m {
  func.func public @main() -> (tensor<i64>, tensor<0xf32>) {
    %0 = stablehlo.constant dense<42> : tensor<i64>
    %1 = stablehlo.constant dense<> : tensor<0xf32>
    return %0, %1 : tensor<i64>, tensor<0xf32>
  }
})", pjrt::CompileOptions{});
  ASSERT_EQ(exe->num_outputs(), 2u);
  auto r = exe->Execute({{}});
  int64_t v = 0;
  r.outputs[0][0]->ToHost(&v, sizeof(v));
  EXPECT_EQ(v, 42);
  EXPECT_EQ(r.outputs[0][1]->dims(), std::vector<int64_t>{0});
  r.outputs[0][1]->ToHost(nullptr, 0);
}

TEST(PjrtExecutable, PortableExecutableRunsOnAnyDevice) {
  auto client = CpuClient();
  pjrt::CompileOptions options;
  options.compile_portable_executable = true;
  auto exe = client->Compile(kAddModule, options);
  auto loaded = client->Deserialize(exe->Serialize());
  std::vector<float> a = {1, 2, 3, 4, 5, 6};
  for (pjrt::Executable* e : {exe.get(), loaded.get()}) {
    for (PJRT_Device* device : client->devices()) {
      auto ba = client->BufferFromHost(a.data(), pjrt::ElementType::kF32, {2, 3}, device);
      auto r = e->ExecuteOn(device, {ba.get(), ba.get()});
      ASSERT_EQ(r.outputs.size(), 1u);
      r.done[0]->Await();
      EXPECT_EQ(r.outputs[0][0]->device(), device);
      std::vector<float> out(6);
      r.outputs[0][0]->ToHost(out.data(), 24);
      EXPECT_EQ(out, (std::vector<float>{2, 4, 6, 8, 10, 12}));
    }
  }
}

TEST(PjrtExecutable, InputOnWrongDeviceIsAnError) {
  auto client = CpuClient();
  auto exe = client->Compile(kAddModule, pjrt::CompileOptions{});  // runs on device 0
  try {
    RunAdd(*client, *exe, client->devices()[1]);
    FAIL() << "expected pjrt::Error";
  } catch (const pjrt::Error& e) {
    EXPECT_EQ(e.code(), pjrt::ErrorCode::kInvalidArgument) << e.what();
  }
}
