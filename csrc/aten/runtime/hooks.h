#pragma once

#include <c10/core/Storage.h>

namespace torchtpu::aten {

// Installs the PrivateUse1 hooks and allocator; called once at import.
void RegisterHooks();
// Grows or shrinks a storage in place, keeping its leading bytes (resize_).
void ResizeStorageBytes(const c10::Storage& storage, size_t new_nbytes);

}  // namespace torchtpu::aten
