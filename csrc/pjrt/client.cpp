// pjrt::Client: client creation, devices, host->device transfers, compile.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

using internal::Check;

std::shared_ptr<Client> Client::Create(std::shared_ptr<Plugin> plugin,
                                       const std::map<std::string, NamedValue>& options) {
  if (!plugin) throw Error(ErrorCode::kInvalidArgument, "Client::Create: null plugin");
  const PJRT_Api* api = plugin->api();
  // The strings and vectors referenced below live in `options` for the call.
  std::vector<PJRT_NamedValue> values;
  values.reserve(options.size());
  for (const auto& [name, value] : options) {
    auto nv = TORCHTPU_PJRT_ARGS(PJRT_NamedValue);
    nv.name = name.c_str();
    nv.name_size = name.size();
    nv.value_size = 1;
    if (const auto* i = std::get_if<int64_t>(&value)) {
      nv.type = PJRT_NamedValue_kInt64;
      nv.int64_value = *i;
    } else if (const auto* s = std::get_if<std::string>(&value)) {
      nv.type = PJRT_NamedValue_kString;
      nv.string_value = s->c_str();
      nv.value_size = s->size();
    } else if (const auto* b = std::get_if<bool>(&value)) {
      nv.type = PJRT_NamedValue_kBool;
      nv.bool_value = *b;
    } else if (const auto* f = std::get_if<float>(&value)) {
      nv.type = PJRT_NamedValue_kFloat;
      nv.float_value = *f;
    } else {
      const auto& list = std::get<std::vector<int64_t>>(value);
      nv.type = PJRT_NamedValue_kInt64List;
      nv.int64_array_value = list.data();
      nv.value_size = list.size();
    }
    values.push_back(nv);
  }
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_Create_Args);
  a.create_options = values.empty() ? nullptr : values.data();
  a.num_options = values.size();
  Check(api, api->PJRT_Client_Create(&a), "PJRT_Client_Create");

  std::shared_ptr<Client> client(new Client());
  client->plugin_ = std::move(plugin);
  client->client_ = a.client;  // owned from here on (destructor frees it)

  auto d = TORCHTPU_PJRT_ARGS(PJRT_Client_AddressableDevices_Args);
  d.client = client->client_;
  Check(api, api->PJRT_Client_AddressableDevices(&d), "PJRT_Client_AddressableDevices");
  client->devices_.assign(d.addressable_devices, d.addressable_devices + d.num_addressable_devices);
  return client;
}

Client::~Client() {
  if (client_ == nullptr || !plugin_) return;
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_Destroy_Args);
  a.client = client_;
  internal::CheckNoThrow(plugin_->api(), plugin_->api()->PJRT_Client_Destroy(&a));
}

std::string Client::platform_name() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_PlatformName_Args);
  a.client = client_;
  Check(api, api->PJRT_Client_PlatformName(&a), "PJRT_Client_PlatformName");
  return std::string(a.platform_name, a.platform_name_size);
}

std::string Client::platform_version() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_PlatformVersion_Args);
  a.client = client_;
  Check(api, api->PJRT_Client_PlatformVersion(&a), "PJRT_Client_PlatformVersion");
  return std::string(a.platform_version, a.platform_version_size);
}

namespace {
PJRT_DeviceDescription* Description(const PJRT_Api* api, PJRT_Device* device) {
  if (device == nullptr) throw Error(ErrorCode::kInvalidArgument, "null PJRT_Device");
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Device_GetDescription_Args);
  a.device = device;
  Check(api, api->PJRT_Device_GetDescription(&a), "PJRT_Device_GetDescription");
  return a.device_description;
}
}  // namespace

int Client::device_id(PJRT_Device* device) const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_DeviceDescription_Id_Args);
  a.device_description = Description(api, device);
  Check(api, api->PJRT_DeviceDescription_Id(&a), "PJRT_DeviceDescription_Id");
  return a.id;
}

std::string Client::device_kind(PJRT_Device* device) const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_DeviceDescription_Kind_Args);
  a.device_description = Description(api, device);
  Check(api, api->PJRT_DeviceDescription_Kind(&a), "PJRT_DeviceDescription_Kind");
  return std::string(a.device_kind, a.device_kind_size);
}

bool Client::MemoryStats(PJRT_Device* device, int64_t* bytes_in_use, int64_t* bytes_limit) const {
  if (!plugin_->HasFunction(offsetof(PJRT_Api, PJRT_Device_MemoryStats))) return false;
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Device_MemoryStats_Args);
  a.device = device;
  PJRT_Error* err = api->PJRT_Device_MemoryStats(&a);
  if (err != nullptr) {
    std::string message;
    ErrorCode code = internal::ConsumeError(api, err, &message);
    if (code == ErrorCode::kUnimplemented) return false;
    throw Error(code, "PJRT_Device_MemoryStats: " + message);
  }
  if (bytes_in_use) *bytes_in_use = a.bytes_in_use;
  if (bytes_limit) *bytes_limit = a.bytes_limit_is_set ? a.bytes_limit : -1;
  return true;
}

namespace {

// PJRT_Client_BufferFromHostBuffer with the given semantics; the returned
// event is done_with_host_buffer.
std::unique_ptr<Buffer> FromHostBuffer(PJRT_Client* raw, const std::shared_ptr<Plugin>& plugin,
                                       const void* data, ElementType type, const std::vector<int64_t>& dims,
                                       PJRT_Device* device, PJRT_HostBufferSemantics semantics,
                                       PJRT_Event** done_with_host) {
  const PJRT_Api* api = plugin->api();
  const PJRT_Buffer_Type pjrt_type = internal::ToPjrt(type);  // throws on bad values
  if (device == nullptr) throw Error(ErrorCode::kInvalidArgument, "BufferFromHost: null device");
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d < 0) throw Error(ErrorCode::kInvalidArgument, "BufferFromHost: negative dimension");
    elements *= d;
  }
  static const uint64_t kEmpty[2] = {0, 0};  // 16-byte aligned dummy for zero-element arrays
  if (data == nullptr) {
    if (elements != 0) throw Error(ErrorCode::kInvalidArgument, "BufferFromHost: null data");
    data = kEmpty;
  }
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_BufferFromHostBuffer_Args);
  a.client = raw;
  a.data = data;
  a.type = pjrt_type;
  a.dims = dims.data();
  a.num_dims = dims.size();
  a.byte_strides = nullptr;  // dense, major-to-minor
  a.num_byte_strides = 0;
  a.host_buffer_semantics = semantics;
  a.device = device;
  a.memory = nullptr;
  a.device_layout = nullptr;
  Check(api, api->PJRT_Client_BufferFromHostBuffer(&a), "PJRT_Client_BufferFromHostBuffer");
  *done_with_host = a.done_with_host_buffer;
  return std::make_unique<Buffer>(plugin, a.buffer);
}

}  // namespace

std::unique_ptr<Buffer> Client::BufferFromHost(const void* data, ElementType type,
                                               const std::vector<int64_t>& dims,
                                               PJRT_Device* device,
                                               std::unique_ptr<Event>* done) {
  PJRT_Event* raw_event = nullptr;
  auto buffer = FromHostBuffer(client_, plugin_, data, type, dims, device,
                               done == nullptr ? PJRT_HostBufferSemantics_kImmutableOnlyDuringCall
                                               : PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes,
                               &raw_event);
  buffer->owner_ = shared_from_this();
  auto event = std::make_unique<Event>(plugin_, raw_event);
  event->owner_ = buffer->owner_;
  if (done == nullptr) {
    event->Await();  // the host memory is free once this returns
  } else {
    *done = std::move(event);
  }
  return buffer;
}

std::unique_ptr<Buffer> Client::BufferAliasingHost(const void* data, ElementType type,
                                                   const std::vector<int64_t>& dims, PJRT_Device* device,
                                                   std::unique_ptr<Event>* released) {
  if (released == nullptr) throw Error(ErrorCode::kInvalidArgument, "BufferAliasingHost: null released");
  PJRT_Event* raw_event = nullptr;
  auto buffer = FromHostBuffer(client_, plugin_, data, type, dims, device,
                               PJRT_HostBufferSemantics_kImmutableZeroCopy, &raw_event);
  buffer->owner_ = shared_from_this();
  *released = std::make_unique<Event>(plugin_, raw_event);
  (*released)->owner_ = buffer->owner_;
  return buffer;
}

std::unique_ptr<Executable> Client::Compile(std::string_view mlir, const CompileOptions& options) {
  const PJRT_Api* api = plugin_->api();
  const std::string serialized_options = options.Serialize();
  static const char kFormat[] = "mlir";
  auto program = TORCHTPU_PJRT_ARGS(PJRT_Program);
  program.code = const_cast<char*>(mlir.data());  // read-only for Compile
  program.code_size = mlir.size();
  program.format = kFormat;
  program.format_size = sizeof(kFormat) - 1;
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Client_Compile_Args);
  a.client = client_;
  a.program = &program;
  a.compile_options = serialized_options.data();
  a.compile_options_size = serialized_options.size();
  Check(api, api->PJRT_Client_Compile(&a), "PJRT_Client_Compile");
  auto exe = std::make_unique<Executable>(plugin_, a.executable);
  exe->owner_ = shared_from_this();
  return exe;
}

std::unique_ptr<Executable> Client::Deserialize(std::string_view serialized) {
  const PJRT_Api* api = plugin_->api();
  if (!plugin_->HasFunction(offsetof(PJRT_Api, PJRT_Executable_DeserializeAndLoad))) {
    throw Error(ErrorCode::kUnimplemented, "this PJRT plugin cannot load serialized executables");
  }
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Executable_DeserializeAndLoad_Args);
  a.client = client_;
  a.serialized_executable = serialized.data();
  a.serialized_executable_size = serialized.size();
  a.overridden_serialized_compile_options = nullptr;  // use the stored options
  a.overridden_serialized_compile_options_size = 0;
  Check(api, api->PJRT_Executable_DeserializeAndLoad(&a), "PJRT_Executable_DeserializeAndLoad");
  auto exe = std::make_unique<Executable>(plugin_, a.loaded_executable);
  exe->owner_ = shared_from_this();
  return exe;
}

}  // namespace torchtpu::pjrt
