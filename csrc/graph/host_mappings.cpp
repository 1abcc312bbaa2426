#include "graph/host_mappings.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>

namespace torchtpu::graph {
namespace {

// Counts the newlines of a /proc file with plain reads: tens of thousands of
// lines take a few milliseconds, and no allocation.
int64_t CountLines(const char* path) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[1 << 16];
  int64_t lines = 0;
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      ::close(fd);
      return -1;
    }
    if (n == 0) break;
    for (ssize_t i = 0; i < n; ++i) lines += buf[i] == '\n';
  }
  ::close(fd);
  return lines;
}

}  // namespace

int64_t CountHostMappings() { return CountLines("/proc/self/maps"); }

int64_t MaxHostMappings() {
  int fd = ::open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[32] = {};
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return -1;
  char* end = nullptr;
  long long v = std::strtoll(buf, &end, 10);
  return end == buf || v <= 0 ? -1 : static_cast<int64_t>(v);
}

}  // namespace torchtpu::graph
