// Plugin loading, versioning, attributes and plugin path resolution.
#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

namespace {

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string HeaderVersion() {
  return std::to_string(PJRT_API_MAJOR) + "." + std::to_string(PJRT_API_MINOR);
}

const std::vector<PluginLocation>& KnownLocations() {
  static const std::vector<PluginLocation> locations = {
      {"cpu", {"xla_plugins/xla_cpu_pjrt/xla_cpu_pjrt.so"}, "pip install xla-cpu-pjrt"},
      {"cuda",
       {
           // jax-cuda13-pjrt
           "jax_plugins/xla_cuda13/xla_cuda_plugin.so",
           // xla-cuda13-pjrt (same layout as xla-cpu-pjrt)
           "xla_plugins/xla_cuda13_pjrt/xla_cuda13_pjrt.so",
           "xla_plugins/xla_cuda13_pjrt/xla_cuda_pjrt.so",
           "xla_plugins/xla_cuda_pjrt/xla_cuda_pjrt.so",
       },
       "pip install jax-cuda13-pjrt"},
      {"tpu", {"libtpu/libtpu.so"}, "pip install libtpu"},
  };
  return locations;
}

// Plugins loaded so far, keyed by dlopen handle: dlopen of the same file
// returns the same handle, and PJRT_Plugin_Initialize must run only once.
// Leaked on purpose (never dlclose, no static destruction order issues).
std::mutex& RegistryMutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::map<void*, std::weak_ptr<Plugin>>& Registry() {
  static auto* r = new std::map<void*, std::weak_ptr<Plugin>>;
  return *r;
}

// A file that is not a shared library for this machine is refused with a
// message before dlopen, which would only say "invalid ELF header".
void CheckElf(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char ident[EI_NIDENT + 4] = {};
  f.read(reinterpret_cast<char*>(ident), sizeof(ident));
  if (f.gcount() < static_cast<std::streamsize>(sizeof(ident)) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    throw PluginError("PJRT plugin '" + path + "' is not a shared library (no ELF header)");
  }
  if (ident[EI_CLASS] != ELFCLASS64) {
    throw PluginError("PJRT plugin '" + path + "' is not a 64-bit shared library");
  }
  uint16_t type = 0, machine = 0;
  std::memcpy(&type, ident + EI_NIDENT, 2);
  std::memcpy(&machine, ident + EI_NIDENT + 2, 2);
#if defined(__x86_64__)
  constexpr uint16_t kMachine = EM_X86_64;
  const char* kMachineName = "x86_64";
#elif defined(__aarch64__)
  constexpr uint16_t kMachine = EM_AARCH64;
  const char* kMachineName = "aarch64";
#else
  constexpr uint16_t kMachine = 0;
  const char* kMachineName = "";
#endif
  if (kMachine != 0 && machine != kMachine) {
    throw PluginError("PJRT plugin '" + path + "' is built for another processor (ELF machine " +
                      std::to_string(machine) + "; this one is " + kMachineName + ")");
  }
  if (type != ET_DYN) {
    throw PluginError("PJRT plugin '" + path + "' is not a shared library (ELF type " +
                      std::to_string(type) + ")");
  }
}

#define TORCHTPU_REQUIRED_FN(name) {offsetof(PJRT_Api, name), #name}

// Every PJRT_Api entry torchtpu calls without checking first. A plugin built
// for an older C API has a shorter table: its struct_size says which entries
// exist, and calling past it jumps to whatever memory follows the table.
// (Optional entries — Plugin_Initialize, Plugin_Attributes,
// Device_MemoryStats, Executable_Serialize/DeserializeAndLoad — are checked
// where they are called.)
struct RequiredFunction {
  size_t offset;
  const char* name;
};
const RequiredFunction kRequired[] = {
    TORCHTPU_REQUIRED_FN(PJRT_Error_Destroy),
    TORCHTPU_REQUIRED_FN(PJRT_Error_Message),
    TORCHTPU_REQUIRED_FN(PJRT_Error_GetCode),
    TORCHTPU_REQUIRED_FN(PJRT_Event_Destroy),
    TORCHTPU_REQUIRED_FN(PJRT_Event_IsReady),
    TORCHTPU_REQUIRED_FN(PJRT_Event_Error),
    TORCHTPU_REQUIRED_FN(PJRT_Event_Await),
    TORCHTPU_REQUIRED_FN(PJRT_Client_Create),
    TORCHTPU_REQUIRED_FN(PJRT_Client_PlatformName),
    TORCHTPU_REQUIRED_FN(PJRT_Client_PlatformVersion),
    TORCHTPU_REQUIRED_FN(PJRT_Client_AddressableDevices),
    TORCHTPU_REQUIRED_FN(PJRT_Client_Compile),
    TORCHTPU_REQUIRED_FN(PJRT_Client_BufferFromHostBuffer),
    TORCHTPU_REQUIRED_FN(PJRT_DeviceDescription_Id),
    TORCHTPU_REQUIRED_FN(PJRT_DeviceDescription_Kind),
    TORCHTPU_REQUIRED_FN(PJRT_Device_GetDescription),
    TORCHTPU_REQUIRED_FN(PJRT_Executable_Destroy),
    TORCHTPU_REQUIRED_FN(PJRT_Executable_NumOutputs),
    TORCHTPU_REQUIRED_FN(PJRT_LoadedExecutable_Destroy),
    TORCHTPU_REQUIRED_FN(PJRT_LoadedExecutable_GetExecutable),
    TORCHTPU_REQUIRED_FN(PJRT_LoadedExecutable_Execute),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_ElementType),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_Dimensions),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_OnDeviceSizeInBytes),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_Device),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_IsDeleted),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_CopyToDevice),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_ToHostBuffer),
    TORCHTPU_REQUIRED_FN(PJRT_Buffer_ReadyEvent),
};
#undef TORCHTPU_REQUIRED_FN

}  // namespace

const PluginLocation& PluginLocationFor(const std::string& platform) {
  for (const auto& loc : KnownLocations()) {
    if (loc.platform == platform) return loc;
  }
  std::string valid;
  for (const auto& loc : KnownLocations()) valid += (valid.empty() ? "" : ", ") + loc.platform;
  throw PluginError("unknown PJRT platform '" + platform + "' (valid: " + valid +
                    ", or a path to a PJRT plugin .so)");
}

std::string ResolvePluginPath(const std::string& platform_or_path,
                              const std::vector<std::string>& search_roots) {
  const std::string& v = platform_or_path;
  bool is_path = v.find('/') != std::string::npos ||
                 (v.size() >= 3 && v.compare(v.size() - 3, 3, ".so") == 0);
  if (is_path) {
    if (!IsRegularFile(v)) throw PluginError("PJRT plugin '" + v + "' does not exist");
    return v;
  }
  const PluginLocation& loc = PluginLocationFor(v);
  for (const auto& root : search_roots) {
    for (const auto& rel : loc.relative_paths) {
      std::string candidate = root;
      if (!candidate.empty() && candidate.back() != '/') candidate += '/';
      candidate += rel;
      if (IsRegularFile(candidate)) return candidate;
    }
  }
  std::ostringstream msg;
  msg << "no PJRT plugin for platform '" << v << "' found; looked for";
  for (size_t i = 0; i < loc.relative_paths.size(); ++i)
    msg << (i ? ", " : " ") << loc.relative_paths[i];
  msg << " under";
  if (search_roots.empty()) msg << " (no search roots)";
  for (size_t i = 0; i < search_roots.size(); ++i) msg << (i ? ", " : " ") << search_roots[i];
  msg << ". Install it with: " << loc.install_hint;
  throw PluginError(msg.str());
}

std::shared_ptr<Plugin> Plugin::Load(const std::string& so_path) {
  CheckElf(so_path);
  // RTLD_LOCAL: plugins bundle their own LLVM/protobuf/absl copies.
  void* handle = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    throw PluginError("cannot load PJRT plugin '" + so_path + "': " + (e ? e : "dlopen failed"));
  }
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto& registry = Registry();
  auto it = registry.find(handle);
  if (it != registry.end()) {
    if (auto existing = it->second.lock()) return existing;
  }
  using GetPjrtApiFn = const PJRT_Api* (*)();
  auto get_api = reinterpret_cast<GetPjrtApiFn>(::dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    throw PluginError("'" + so_path + "' is not a PJRT plugin (no GetPjrtApi symbol)");
  }
  const PJRT_Api* api = get_api();
  if (api == nullptr) throw PluginError("GetPjrtApi() of '" + so_path + "' returned null");
  if (api->struct_size < offsetof(PJRT_Api, pjrt_api_version) + sizeof(PJRT_Api_Version)) {
    throw PluginError("PJRT plugin '" + so_path + "' has a truncated PJRT_Api table");
  }
  const int major = api->pjrt_api_version.major_version;
  const int minor = api->pjrt_api_version.minor_version;
  if (major != PJRT_API_MAJOR) {
    throw PluginError("PJRT plugin '" + so_path + "' has PJRT C API version " +
                      std::to_string(major) + "." + std::to_string(minor) +
                      ", but torchtpu was built against PJRT C API " + HeaderVersion() +
                      " (major versions must match)");
  }
  std::shared_ptr<Plugin> plugin(new Plugin());
  plugin->handle_ = handle;
  plugin->api_ = api;
  plugin->path_ = so_path;
  // Checked before the first call into the table (Plugin_Initialize).
  std::string missing;
  for (const RequiredFunction& f : kRequired) {
    if (!plugin->HasFunction(f.offset)) missing += (missing.empty() ? "" : ", ") + std::string(f.name);
  }
  if (!missing.empty()) {
    throw PluginError("PJRT plugin '" + so_path + "' has PJRT C API version " +
                      std::to_string(major) + "." + std::to_string(minor) +
                      ", which lacks functions torchtpu calls (" + missing +
                      "); torchtpu was built against PJRT C API " + HeaderVersion() +
                      ": use a plugin release built for that version or close to it");
  }
  if (plugin->HasFunction(offsetof(PJRT_Api, PJRT_Plugin_Initialize))) {
    // Initialize runs only the first time this handle is seen (a weak entry
    // that expired still means the plugin was initialized already).
    if (it == registry.end()) {
      auto a = TORCHTPU_PJRT_ARGS(PJRT_Plugin_Initialize_Args);
      internal::Check(api, api->PJRT_Plugin_Initialize(&a), "PJRT_Plugin_Initialize");
    }
  }
  registry[handle] = plugin;
  return plugin;
}

// The shared object stays loaded for the life of the process: objects created
// by the plugin (threads, static destructors, atexit handlers) may outlive us.
Plugin::~Plugin() = default;

int Plugin::api_major() const { return api_->pjrt_api_version.major_version; }
int Plugin::api_minor() const { return api_->pjrt_api_version.minor_version; }

bool Plugin::HasFunction(size_t offset_in_api) const {
  if (api_ == nullptr || api_->struct_size < offset_in_api + sizeof(void*)) return false;
  void* fn = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(api_) + offset_in_api, sizeof(void*));
  return fn != nullptr;
}

std::map<std::string, std::string> Plugin::Attributes() const {
  std::map<std::string, std::string> out;
  if (!HasFunction(offsetof(PJRT_Api, PJRT_Plugin_Attributes))) return out;
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Plugin_Attributes_Args);
  internal::Check(api_, api_->PJRT_Plugin_Attributes(&a), "PJRT_Plugin_Attributes");
  for (size_t i = 0; i < a.num_attributes; ++i) {
    const PJRT_NamedValue& nv = a.attributes[i];
    std::string name(nv.name, nv.name_size);
    std::string value;
    switch (nv.type) {
      case PJRT_NamedValue_kString:
        value.assign(nv.string_value, nv.value_size);
        break;
      case PJRT_NamedValue_kInt64:
        value = std::to_string(nv.int64_value);
        break;
      case PJRT_NamedValue_kInt64List:
        for (size_t j = 0; j < nv.value_size; ++j) {
          if (j) value += '.';
          value += std::to_string(nv.int64_array_value[j]);
        }
        break;
      case PJRT_NamedValue_kFloat: {
        std::ostringstream s;
        s << nv.float_value;
        value = s.str();
        break;
      }
      case PJRT_NamedValue_kBool:
        value = nv.bool_value ? "1" : "0";
        break;
      default:
        value = "<unknown attribute type " + std::to_string(static_cast<int>(nv.type)) + ">";
        break;
    }
    out[name] = value;
  }
  return out;
}

}  // namespace torchtpu::pjrt
