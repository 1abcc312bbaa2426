// pjrt::Buffer: owns one PJRT_Buffer.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

using internal::Check;

namespace {

// Reads a ready buffer's bytes where they lie, when the plugin keeps them in
// host memory (the CPU plugin: PJRT_Buffer_IsOnCpu). PJRT_Buffer_ToHostBuffer
// hands the copy to the client's worker threads and wakes the caller when it
// is done: two thread switches that are most of a small read's cost and, on
// busy cores, wait for a core (host-staged collectives run two ranks on the
// same cores). Only for buffers of rank 0 or 1, whose one layout is dense
// (storages are flat buffers); false when the plugin cannot say, when the
// buffer is elsewhere or shaped, or when the sizes disagree: the caller then
// takes the PJRT copy.
bool ReadHostMemory(Buffer& buffer, const Plugin& plugin, void* dst, size_t dst_size) {
  if (!plugin.HasFunction(offsetof(PJRT_Api, PJRT_Buffer_IsOnCpu)) ||
      !plugin.HasFunction(offsetof(PJRT_Api, PJRT_Buffer_UnsafePointer))) {
    return false;
  }
  const PJRT_Api* api = plugin.api();
  auto on_cpu = TORCHTPU_PJRT_ARGS(PJRT_Buffer_IsOnCpu_Args);
  on_cpu.buffer = buffer.raw();
  Check(api, api->PJRT_Buffer_IsOnCpu(&on_cpu), "PJRT_Buffer_IsOnCpu");
  if (!on_cpu.is_on_cpu || buffer.dims().size() > 1) return false;
  if (buffer.on_device_size() != dst_size) return false;  // packed or padded elements
  // Wait for the producer first (and take its error, as ToHostBuffer would).
  buffer.AwaitReady();
  auto ptr = TORCHTPU_PJRT_ARGS(PJRT_Buffer_UnsafePointer_Args);
  ptr.buffer = buffer.raw();
  Check(api, api->PJRT_Buffer_UnsafePointer(&ptr), "PJRT_Buffer_UnsafePointer");
  if (ptr.buffer_pointer == 0) return false;
  std::memcpy(dst, reinterpret_cast<const void*>(ptr.buffer_pointer), dst_size);
  return true;
}

}  // namespace

Buffer::Buffer(std::shared_ptr<Plugin> plugin, PJRT_Buffer* buffer)
    : plugin_(std::move(plugin)), buffer_(buffer) {}

Buffer::~Buffer() {
  if (buffer_ == nullptr || !plugin_) return;
  // Also required for deleted/donated buffers: Destroy frees the handle.
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_Destroy_Args);
  a.buffer = buffer_;
  internal::CheckNoThrow(plugin_->api(), plugin_->api()->PJRT_Buffer_Destroy(&a));
}

ElementType Buffer::element_type() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_ElementType_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_ElementType(&a), "PJRT_Buffer_ElementType");
  return internal::FromPjrt(a.type);
}

std::vector<int64_t> Buffer::dims() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_Dimensions_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_Dimensions(&a), "PJRT_Buffer_Dimensions");
  return std::vector<int64_t>(a.dims, a.dims + a.num_dims);
}

size_t Buffer::on_device_size() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_OnDeviceSizeInBytes_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_OnDeviceSizeInBytes(&a), "PJRT_Buffer_OnDeviceSizeInBytes");
  return a.on_device_size_in_bytes;
}

bool Buffer::IsDeleted() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_IsDeleted_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_IsDeleted(&a), "PJRT_Buffer_IsDeleted");
  return a.is_deleted;
}

void Buffer::AwaitReady() {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_ReadyEvent_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_ReadyEvent(&a), "PJRT_Buffer_ReadyEvent");
  Event event(plugin_, a.event);  // destroyed on every path
  event.Await();
}

std::unique_ptr<Event> Buffer::ToHostAsync(void* dst, size_t dst_size) {
  const PJRT_Api* api = plugin_->api();
  // Ask for the dense size first: the plugin accepts a larger dst silently,
  // which would hide a caller's shape/dtype mismatch.
  auto q = TORCHTPU_PJRT_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  q.src = buffer_;
  q.dst = nullptr;
  Check(api, api->PJRT_Buffer_ToHostBuffer(&q), "PJRT_Buffer_ToHostBuffer (size query)");
  internal::DestroyEvent(api, q.event);
  if (q.dst_size != dst_size) {
    throw Error(ErrorCode::kInvalidArgument,
                "Buffer::ToHost: destination has " + std::to_string(dst_size) +
                    " bytes but the buffer needs " + std::to_string(q.dst_size));
  }
  if (dst_size == 0) {
    // Nothing to copy (zero-element buffer); still report when it is ready.
    auto r = TORCHTPU_PJRT_ARGS(PJRT_Buffer_ReadyEvent_Args);
    r.buffer = buffer_;
    Check(api, api->PJRT_Buffer_ReadyEvent(&r), "PJRT_Buffer_ReadyEvent");
    auto event = std::make_unique<Event>(plugin_, r.event);
    event->owner_ = owner_;
    return event;
  }
  if (dst == nullptr) throw Error(ErrorCode::kInvalidArgument, "Buffer::ToHost: dst is null");
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_ToHostBuffer_Args);
  a.src = buffer_;
  a.host_layout = nullptr;  // dense row-major (the buffer's default layout)
  a.dst = dst;
  a.dst_size = dst_size;
  Check(api, api->PJRT_Buffer_ToHostBuffer(&a), "PJRT_Buffer_ToHostBuffer");
  auto event = std::make_unique<Event>(plugin_, a.event);
  event->owner_ = owner_;
  return event;
}

void Buffer::ToHost(void* dst, size_t dst_size) {
  if (dst != nullptr && dst_size > 0 && ReadHostMemory(*this, *plugin_, dst, dst_size)) return;
  ToHostAsync(dst, dst_size)->Await();
}

PJRT_Device* Buffer::device() const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_Device_Args);
  a.buffer = buffer_;
  Check(api, api->PJRT_Buffer_Device(&a), "PJRT_Buffer_Device");
  return a.device;
}

std::unique_ptr<Buffer> Buffer::CopyToDevice(PJRT_Device* device) const {
  const PJRT_Api* api = plugin_->api();
  auto a = TORCHTPU_PJRT_ARGS(PJRT_Buffer_CopyToDevice_Args);
  a.buffer = buffer_;
  a.dst_device = device;
  Check(api, api->PJRT_Buffer_CopyToDevice(&a), "PJRT_Buffer_CopyToDevice");
  auto out = std::make_unique<Buffer>(plugin_, a.dst_buffer);
  out->owner_ = owner_;
  return out;
}

}  // namespace torchtpu::pjrt
