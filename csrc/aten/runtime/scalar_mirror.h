// Host mirror for element-by-element reads. Python loops that read a tpu
// tensor one element at a time (`for v in t: bool(v)`, `all(mask)`,
// `[x.item() for x in t]`) would otherwise run one device read per element.
// The second read in a row from the same device buffer copies the whole
// buffer to the host once (up to kMirrorMaxBytes) and later reads are served
// from that copy. Device buffers are immutable (every write to a storage
// installs a new buffer), so a copy keyed by the buffer object cannot go
// stale; a weak reference notices when the buffer is gone.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <cstddef>
#include <optional>

namespace torchtpu::aten {

constexpr size_t kMirrorMaxBytes = size_t{16} << 20;

// The value of the one-element tpu tensor `t`, from the calling thread's
// mirror of its storage, or nullopt when the mirror does not apply (first
// read of this buffer, a large or reinterpreted storage, lazy conj/neg bits):
// the caller then reads it from the device as usual.
std::optional<c10::Scalar> ReadThroughMirror(const at::Tensor& t);

// Mirror statistics of the calling thread (tests): reads served, fills.
struct MirrorStats {
  int64_t hits = 0;
  int64_t fills = 0;
};
MirrorStats ThreadMirrorStats();

}  // namespace torchtpu::aten
