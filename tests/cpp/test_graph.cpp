// graph/: signatures, view reads and writes checked against a host
// reference, lowering errors, and the compile cache's hits and statistics.
#include <gtest/gtest.h>

#include <numeric>
#include <ostream>

#include "graph/compile_cache.h"
#include "graph/host_mappings.h"
#include "graph/lowering.h"
#include "graph/signature.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;

namespace {

using testing_plugin::Download;
using testing_plugin::Upload;

REGISTER_LOWERING("test.identity", [](hlo::Builder&, const graph::Node&, const std::vector<hlo::Value>& in) {
  return std::vector<hlo::Value>{in[0]};
});
REGISTER_LOWERING("test.add", [](hlo::Builder& b, const graph::Node&, const std::vector<hlo::Value>& in) {
  return std::vector<hlo::Value>{b.Add(in[0], b.BroadcastTo(in[1], in[0].shape()))};
});

graph::View MakeView(std::vector<int64_t> sizes, std::vector<int64_t> strides, int64_t offset) {
  graph::View v;
  v.sizes = std::move(sizes);
  v.strides = std::move(strides);
  v.offset = offset;
  return v;
}

// Host reference of a strided read.
std::vector<float> Strided(const std::vector<float>& base, const graph::View& v) {
  std::vector<float> out;
  std::vector<int64_t> idx(v.sizes.size(), 0);
  int64_t n = v.numel();
  for (int64_t k = 0; k < n; ++k) {
    int64_t off = v.offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * v.strides[d];
    out.push_back(base[off]);
    for (int64_t d = static_cast<int64_t>(idx.size()) - 1; d >= 0; --d) {
      if (++idx[d] < v.sizes[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

graph::CompileCache& Cache() {
  static graph::CompileCache cache(testing_plugin::Client());
  return cache;
}



}  // namespace

TEST(GraphSignature, EqualNodesShareAKeyAndViewsChangeIt) {
  graph::Node a;
  a.op = "test.identity";
  a.args = {hlo::TensorType{DType::kF32, {12}}};
  a.inputs = {graph::Input{0, MakeView({3, 4}, {4, 1}, 0)}};
  graph::Node b = a;
  EXPECT_EQ(graph::Signature(a), graph::Signature(b));
  b.inputs[0].view = MakeView({4, 3}, {1, 4}, 0);
  EXPECT_NE(graph::Signature(a), graph::Signature(b));
  b = a;
  b.attrs = {int64_t{1}};
  EXPECT_NE(graph::Signature(a), graph::Signature(b));
  graph::Node c = a;
  c.attrs = {1.0};  // same bits as an int? the kind is part of the key
  EXPECT_NE(graph::Signature(b), graph::Signature(c));
}

class GraphViewRead : public ::testing::TestWithParam<graph::View> {};

namespace torchtpu::graph {
// Readable test names: sizes/strides/offset.
void PrintTo(const View& v, std::ostream* os) {
  *os << "sizes";
  for (int64_t s : v.sizes) *os << "_" << s;
  *os << " strides";
  for (int64_t s : v.strides) *os << "_" << s;
  *os << " offset_" << v.offset;
}
}  // namespace torchtpu::graph

TEST_P(GraphViewRead, MatchesHostReference) {
  std::vector<float> base(40);
  std::iota(base.begin(), base.end(), 1.0f);
  graph::View v = GetParam();
  graph::Node node;
  node.op = "test.identity";
  node.args = {hlo::TensorType{DType::kF32, {40}}};
  node.inputs = {graph::Input{0, v}};
  std::shared_ptr<graph::CacheEntry> entry = Cache().Get(node, 0);
  auto buf = Upload(base);
  auto launch = graph::Execute(*entry, {buf.get()});
  EXPECT_EQ(Download(*launch.results[0], v.numel()), Strided(base, v));
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, GraphViewRead,
    ::testing::Values(MakeView({40}, {1}, 0),                 // whole
                      MakeView({3, 4}, {4, 1}, 5),            // contiguous range
                      MakeView({4, 3}, {1, 4}, 0),            // transpose
                      MakeView({2, 3}, {10, 2}, 1),           // step slices
                      MakeView({3, 4}, {0, 1}, 2),            // expand
                      MakeView({2, 2, 2}, {1, 8, 3}, 0),      // permuted, non-nesting strides
                      MakeView({5, 3}, {2, 1}, 0),            // overlapping rows (unfold-like)
                      MakeView({}, {}, 7),                    // scalar
                      MakeView({0, 3}, {3, 1}, 0)));          // empty

TEST(GraphViewWrite, WritesExactlyTheViewAndDonates) {
  std::vector<float> base(12, 0.0f);
  graph::Node node;
  node.op = "test.add";
  node.args = {hlo::TensorType{DType::kF32, {12}}, hlo::TensorType{DType::kF32, {}}};
  graph::View v = MakeView({3, 2}, {4, 1}, 1);  // x[:, 1:3] of a 3x4
  node.inputs = {graph::Input{0, v}, graph::Input{1, std::nullopt}};
  node.writes = {graph::Write{0, 0, v, hlo::TensorType{DType::kF32, {12}}}};
  std::shared_ptr<graph::CacheEntry> entry = Cache().Get(node, 0);
  auto buf = Upload(base);
  float one = 1.0f;
  auto c = testing_plugin::Client();
  auto scalar = c->BufferFromHost(&one, pjrt::ElementType::kF32, {}, c->devices()[0]);
  auto launch = graph::Execute(*entry, {buf.get(), scalar.get()});
  EXPECT_TRUE(buf->IsDeleted());  // donated
  std::vector<float> expect = {0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1, 0};
  EXPECT_EQ(Download(*launch.results[0], 12), expect);
}

TEST(GraphViewAtRuntimeOffset, RowsShareOneProgramAndReadAndWriteTheirOwnElements) {
  // node: y[row_w] = x[row_r] + 0 for a 5 x 4 x, the rows' starts passed as
  // i64 scalars (Input/Write::offset_arg).
  auto c = testing_plugin::Client();
  std::vector<float> xs(20);
  std::iota(xs.begin(), xs.end(), 1.0f);
  auto make = [](int64_t read_row, int64_t write_row) {
    graph::Node node;
    node.op = "test.add";
    node.args = {hlo::TensorType{DType::kF32, {20}}, hlo::TensorType{DType::kF32, {}},
                 hlo::TensorType{DType::kF32, {20}}, hlo::TensorType{DType::kI64, {}},
                 hlo::TensorType{DType::kI64, {}}};
    graph::Input row{0, MakeView({4}, {1}, 4 * read_row)};
    row.offset_arg = 3;
    node.inputs = {row, graph::Input{1, std::nullopt}};
    graph::Write w{0, 2, MakeView({4}, {1}, 4 * write_row), hlo::TensorType{DType::kF32, {20}}};
    w.offset_arg = 4;
    node.writes = {w};
    return node;
  };
  EXPECT_EQ(graph::Signature(make(1, 2)), graph::Signature(make(3, 0)));
  graph::Node fixed = make(1, 2);
  fixed.inputs[0].offset_arg = -1;
  EXPECT_NE(graph::Signature(fixed), graph::Signature(make(1, 2)));
  std::shared_ptr<graph::CacheEntry> entry = Cache().Get(make(1, 2), 0);
  float zero = 0.0f;
  auto scalar = c->BufferFromHost(&zero, pjrt::ElementType::kF32, {}, c->devices()[0]);
  for (int64_t r : {0, 3, 4}) {
    const int64_t w = 4 - r;
    int64_t read_start = 4 * r, write_start = 4 * w;
    auto rs = c->BufferFromHost(&read_start, pjrt::ElementType::kS64, {}, c->devices()[0]);
    auto ws = c->BufferFromHost(&write_start, pjrt::ElementType::kS64, {}, c->devices()[0]);
    auto x = Upload(xs);
    auto y = Upload(std::vector<float>(20, -1.0f));
    auto launch = graph::Execute(*entry, {x.get(), scalar.get(), y.get(), rs.get(), ws.get()});
    std::vector<float> expect(20, -1.0f);
    for (int k = 0; k < 4; ++k) expect[4 * w + k] = xs[4 * r + k];
    EXPECT_EQ(Download(*launch.results[0], 20), expect) << "row " << r << " into row " << w;
  }
}

TEST(GraphCache, HitsDoNotRecompileAndStatsCount) {
  graph::CompileCache cache(testing_plugin::Client());
  graph::Node node;
  node.op = "test.identity";
  node.args = {hlo::TensorType{DType::kF32, {6}}};
  node.inputs = {graph::Input{0, MakeView({2, 3}, {3, 1}, 0)}};
  graph::CacheEntry* first = cache.Get(node, 0).get();
  graph::CacheEntry* second = cache.Get(node, 0).get();
  EXPECT_EQ(first, second);
  EXPECT_EQ(cache.misses(), 1);
  EXPECT_EQ(cache.hits(), 1);
  auto stats = cache.Stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].hits, 1);
  EXPECT_EQ(stats[0].description, "test.identity(f32[2,3])");
  EXPECT_GT(stats[0].compile_seconds, 0.0);
  EXPECT_EQ(cache.ResultTypes(node)[0].shape, (hlo::Shape{2, 3}));
}

// test.identity over a flat f32[n]: a distinct program per n.
static graph::Node IdentityOf(int64_t n) {
  graph::Node node;
  node.op = "test.identity";
  node.args = {hlo::TensorType{DType::kF32, {n}}};
  node.inputs = {graph::Input{0, std::nullopt}};
  return node;
}

TEST(GraphCache, MemoryLimitEvictsTheLeastRecentlyUsedAndEvictedEntriesStayUsable) {
  graph::CompileCache cache(testing_plugin::Client());
  cache.SetMemoryLimit(2);
  std::shared_ptr<graph::CacheEntry> two = cache.Get(IdentityOf(2), 0);
  cache.Get(IdentityOf(3), 0);
  cache.Get(IdentityOf(2), 0);  // 2 is now more recent than 3
  cache.Get(IdentityOf(4), 0);  // evicts 3
  EXPECT_EQ(cache.Counters().memory_evictions, 1);
  EXPECT_EQ(cache.Counters().memory_programs, 2);
  EXPECT_TRUE(cache.Holds(graph::Signature(IdentityOf(2)), 0));
  EXPECT_FALSE(cache.Holds(graph::Signature(IdentityOf(3)), 0));
  EXPECT_TRUE(cache.Holds(graph::Signature(IdentityOf(4)), 0));
  cache.Get(IdentityOf(3), 0);  // compiled again; evicts 2, which `two` still holds
  EXPECT_EQ(cache.misses(), 4);
  EXPECT_FALSE(cache.Holds(graph::Signature(IdentityOf(2)), 0));
  auto buf = Upload({5, 6});
  auto launch = graph::Execute(*two, {buf.get()});
  EXPECT_EQ(Download(*launch.results.at(0), 2), (std::vector<float>{5, 6}));
  cache.SetMemoryLimit(1);  // lowering the limit evicts at once
  EXPECT_EQ(cache.Counters().memory_programs, 1);
  cache.SetMemoryLimit(0);  // no limit
  for (int64_t n = 5; n < 9; ++n) cache.Get(IdentityOf(n), 0);
  EXPECT_EQ(cache.Counters().memory_programs, 5);
}

TEST(GraphCache, MappingPressureDropsTheLeastRecentlyUsedHalf) {
  graph::CompileCache cache(testing_plugin::Client());
  cache.SetMappingBudget(0);  // unwatched: nothing dropped
  for (int64_t n = 1; n <= graph::CompileCache::kMappingCheckEvery; ++n) cache.Get(IdentityOf(n), 0);
  EXPECT_EQ(cache.Counters().memory_evictions, 0);
  ASSERT_GT(graph::CountHostMappings(), 1);
  cache.SetMappingBudget(1, /*floor=*/2);  // always over budget: each check halves the tier until nothing more is freed
  std::shared_ptr<graph::CacheEntry> last;
  for (int64_t n = 101; n <= 100 + graph::CompileCache::kMappingCheckEvery; ++n) last = cache.Get(IdentityOf(n), 0);
  const graph::CompileCounters c = cache.Counters();
  EXPECT_GT(c.memory_evictions, 0);
  EXPECT_LT(c.memory_programs, 2 * graph::CompileCache::kMappingCheckEvery);
  EXPECT_GE(c.memory_programs, 2);  // never below the floor
  EXPECT_EQ(c.memory_programs + c.memory_evictions, 2 * graph::CompileCache::kMappingCheckEvery);
  // The program just compiled is never the one dropped.
  EXPECT_TRUE(cache.Holds(graph::Signature(IdentityOf(100 + graph::CompileCache::kMappingCheckEvery)), 0));
  // The first, least recently used, went first.
  EXPECT_FALSE(cache.Holds(graph::Signature(IdentityOf(1)), 0));
}

TEST(GraphCache, HostMappingsAreCounted) {
  const int64_t n = graph::CountHostMappings();
  EXPECT_GT(n, 10);  // the executable, its libraries, the heap, the stack
  EXPECT_GE(graph::MaxHostMappings(), n);
}

TEST(GraphCache, UnknownOpAndBadShapesRaiseNamingTheOp) {
  graph::CompileCache cache(testing_plugin::Client());
  graph::Node node;
  node.op = "test.missing";
  node.args = {hlo::TensorType{DType::kF32, {2}}};
  node.inputs = {graph::Input{0, std::nullopt}};
  try {
    cache.Get(node, 0);
    FAIL() << "expected LoweringError";
  } catch (const graph::LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("test.missing(f32[2])"), std::string::npos) << e.what();
  }
  node.op = "test.add";
  node.args.push_back(hlo::TensorType{DType::kF32, {3}});
  node.inputs.push_back(graph::Input{1, std::nullopt});
  try {
    cache.Get(node, 0);
    FAIL() << "expected LoweringError";
  } catch (const graph::LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("test.add(f32[2], f32[3])"), std::string::npos) << e.what();
  }
}

TEST(GraphCache, RunsOnTheSecondDevice) {
  graph::CompileCache cache(testing_plugin::Client());
  graph::Node node;
  node.op = "test.identity";
  node.args = {hlo::TensorType{DType::kF32, {3}}};
  node.inputs = {graph::Input{0, std::nullopt}};
  std::shared_ptr<graph::CacheEntry> entry = cache.Get(node, 1);
  auto c = testing_plugin::Client();
  std::vector<float> data = {1, 2, 3};
  auto buf = c->BufferFromHost(data.data(), pjrt::ElementType::kF32, {3}, c->devices()[1]);
  auto launch = graph::Execute(*entry, {buf.get()});
  EXPECT_EQ(Download(*launch.results[0], 3), data);
}
