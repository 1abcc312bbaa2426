// pjrt::Executable: owns one PJRT_LoadedExecutable.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

using internal::Check;

namespace {

// PJRT_LoadedExecutable_GetExecutable returns a new PJRT_Executable that the
// caller must destroy; this holds it for the duration of a query.
class UnloadedExecutable {
 public:
  UnloadedExecutable(const PJRT_Api* api, PJRT_LoadedExecutable* loaded) : api_(api) {
    auto a = TORCHTPU_PJRT_ARGS(PJRT_LoadedExecutable_GetExecutable_Args);
    a.loaded_executable = loaded;
    Check(api, api->PJRT_LoadedExecutable_GetExecutable(&a), "PJRT_LoadedExecutable_GetExecutable");
    exe_ = a.executable;
  }
  ~UnloadedExecutable() {
    auto a = TORCHTPU_PJRT_ARGS(PJRT_Executable_Destroy_Args);
    a.executable = exe_;
    internal::CheckNoThrow(api_, api_->PJRT_Executable_Destroy(&a));
  }
  UnloadedExecutable(const UnloadedExecutable&) = delete;
  UnloadedExecutable& operator=(const UnloadedExecutable&) = delete;
  PJRT_Executable* get() const { return exe_; }

 private:
  const PJRT_Api* api_;
  PJRT_Executable* exe_ = nullptr;
};

void DestroyLoaded(const PJRT_Api* api, PJRT_LoadedExecutable* exe) noexcept {
  auto a = TORCHTPU_PJRT_ARGS(PJRT_LoadedExecutable_Destroy_Args);
  a.executable = exe;
  internal::CheckNoThrow(api, api->PJRT_LoadedExecutable_Destroy(&a));
}

}  // namespace

Executable::Executable(std::shared_ptr<Plugin> plugin, PJRT_LoadedExecutable* exe)
    : plugin_(std::move(plugin)), exe_(exe) {
  const PJRT_Api* api = plugin_->api();
  try {
    UnloadedExecutable unloaded(api, exe_);
    auto a = TORCHTPU_PJRT_ARGS(PJRT_Executable_NumOutputs_Args);
    a.executable = unloaded.get();
    Check(api, api->PJRT_Executable_NumOutputs(&a), "PJRT_Executable_NumOutputs");
    num_outputs_ = a.num_outputs;
  } catch (...) {
    DestroyLoaded(api, exe_);  // the destructor will not run
    throw;
  }
}

Executable::~Executable() {
  if (exe_ != nullptr && plugin_) DestroyLoaded(plugin_->api(), exe_);
}

size_t Executable::num_outputs() const { return num_outputs_; }

ExecuteResult Executable::Execute(const std::vector<std::vector<Buffer*>>& args,
                                  const std::vector<int64_t>& non_donatable) {
  return Run(args, non_donatable, nullptr);
}

ExecuteResult Executable::ExecuteOn(PJRT_Device* device, const std::vector<Buffer*>& args,
                                    const std::vector<int64_t>& non_donatable) {
  if (device == nullptr) throw Error(ErrorCode::kInvalidArgument, "ExecuteOn: null device");
  return Run({args}, non_donatable, device);
}

ExecuteResult Executable::Run(const std::vector<std::vector<Buffer*>>& args,
                              const std::vector<int64_t>& non_donatable,
                              PJRT_Device* execute_device) {
  const PJRT_Api* api = plugin_->api();
  if (args.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "Executable::Execute: need one argument list per device");
  }
  const size_t num_devices = args.size();
  const size_t num_args = args[0].size();
  // Flat storage, so that even zero-length lists have valid pointers.
  std::vector<PJRT_Buffer*> flat_args(num_devices * num_args + 1, nullptr);
  std::vector<PJRT_Buffer* const*> arg_lists(num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    if (args[d].size() != num_args) {
      throw Error(ErrorCode::kInvalidArgument,
                  "Executable::Execute: every device needs the same number of arguments");
    }
    for (size_t i = 0; i < num_args; ++i) {
      if (args[d][i] == nullptr || args[d][i]->raw() == nullptr) {
        throw Error(ErrorCode::kInvalidArgument, "Executable::Execute: null argument buffer");
      }
      flat_args[d * num_args + i] = args[d][i]->raw();
    }
    arg_lists[d] = flat_args.data() + d * num_args;
  }
  const size_t n_out = num_outputs_;
  std::vector<PJRT_Buffer*> flat_outputs(num_devices * n_out + 1, nullptr);
  std::vector<PJRT_Buffer**> output_lists(num_devices);
  for (size_t d = 0; d < num_devices; ++d) output_lists[d] = flat_outputs.data() + d * n_out;
  std::vector<PJRT_Event*> events(num_devices, nullptr);

  auto options = TORCHTPU_PJRT_ARGS(PJRT_ExecuteOptions);  // never pass null options
  options.non_donatable_input_indices = non_donatable.empty() ? nullptr : non_donatable.data();
  options.num_non_donatable_input_indices = non_donatable.size();

  auto a = TORCHTPU_PJRT_ARGS(PJRT_LoadedExecutable_Execute_Args);
  a.executable = exe_;
  a.options = &options;
  a.argument_lists = arg_lists.data();
  a.num_devices = num_devices;
  a.num_args = num_args;
  a.output_lists = output_lists.data();
  a.device_complete_events = events.data();
  a.execute_device = execute_device;  // null: the devices chosen at compile time
  Check(api, api->PJRT_LoadedExecutable_Execute(&a), "PJRT_LoadedExecutable_Execute");

  ExecuteResult result;
  result.outputs.resize(num_devices);
  for (size_t d = 0; d < num_devices; ++d) {
    result.outputs[d].reserve(n_out);
    for (size_t i = 0; i < n_out; ++i) {
      auto b = std::make_unique<Buffer>(plugin_, output_lists[d][i]);
      b->owner_ = owner_;
      result.outputs[d].push_back(std::move(b));
    }
    auto e = std::make_unique<Event>(plugin_, events[d]);
    e->owner_ = owner_;
    result.done.push_back(std::move(e));
  }
  return result;
}

std::string Executable::Serialize() const {
  const PJRT_Api* api = plugin_->api();
  if (!plugin_->HasFunction(offsetof(PJRT_Api, PJRT_Executable_Serialize))) {
    throw Error(ErrorCode::kUnimplemented, "this PJRT plugin cannot serialize executables");
  }
  UnloadedExecutable unloaded(api, exe_);
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Executable_Serialize_Args);
  a.executable = unloaded.get();
  Check(api, api->PJRT_Executable_Serialize(&a), "PJRT_Executable_Serialize");
  std::string out;
  try {
    out.assign(a.serialized_bytes, a.serialized_bytes_size);
  } catch (...) {
    if (a.serialized_executable_deleter) a.serialized_executable_deleter(a.serialized_executable);
    throw;
  }
  if (a.serialized_executable_deleter) a.serialized_executable_deleter(a.serialized_executable);
  return out;
}

}  // namespace torchtpu::pjrt
