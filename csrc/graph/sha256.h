// SHA-256 (FIPS 180-4), for the persistent compile cache's keys and entry
// checksums. A small self-contained implementation: the cache must not trust
// a weak hash, and the graph layer takes no crypto dependency.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace torchtpu::graph {

class Sha256 {
 public:
  Sha256();
  Sha256& Update(std::string_view data);
  // The 32-byte digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> Digest();

 private:
  void Block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

std::string Sha256Bytes(std::string_view data);  // 32 raw bytes
std::string Sha256Hex(std::string_view data);    // 64 lowercase hex digits
std::string ToHex(std::string_view bytes);

}  // namespace torchtpu::graph
