// graph/fused_graph: several nodes lowered into one program, run on the CPU
// plugin; the key is exact and incremental; donation and errors.
#include <gtest/gtest.h>

#include "graph/compile_cache.h"
#include "graph/fused_graph.h"
#include "graph/lowering.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;

namespace {

using testing_plugin::Download;
using testing_plugin::Upload;

REGISTER_LOWERING("fused_test.mul", [](hlo::Builder& b, const graph::Node&, const std::vector<hlo::Value>& in) {
  return std::vector<hlo::Value>{b.Mul(in[0], b.BroadcastTo(in[1], in[0].shape()))};
});
REGISTER_LOWERING("fused_test.broken", [](hlo::Builder&, const graph::Node&, const std::vector<hlo::Value>&)
                                           -> std::vector<hlo::Value> {
  throw hlo::BuildError("operand shapes do not match");
});

graph::View Whole(int64_t n) {
  graph::View v;
  v.sizes = {n};
  v.strides = {1};
  return v;
}

// out = in0 * in1, both read whole.
graph::Node Mul(int64_t n) {
  graph::Node node;
  node.op = "fused_test.mul";
  node.args = {hlo::TensorType{DType::kF32, {n}}, hlo::TensorType{DType::kF32, {n}}};
  node.inputs = {graph::Input{0, Whole(n)}, graph::Input{1, Whole(n)}};
  return node;
}

graph::CompileCache& Cache() {
  static graph::CompileCache cache(testing_plugin::Client());
  return cache;
}



// y = x * w; z = y * y: two nodes, the intermediate y never leaves the program.
graph::FusedGraph SquareOfProduct(int64_t n) {
  graph::FusedGraph g;
  int x = g.AddInput(hlo::TensorType{DType::kF32, {n}});
  int w = g.AddInput(hlo::TensorType{DType::kF32, {n}});
  std::vector<hlo::TensorType> types = {hlo::TensorType{DType::kF32, {n}}};
  int y = g.AddNode(Mul(n), {graph::ValueRef{-1, x}, graph::ValueRef{-1, w}}, types);
  g.AddNode(Mul(n), {graph::ValueRef{y, 0}, graph::ValueRef{y, 0}}, types);
  return g;
}

}  // namespace

TEST(FusedGraph, RunsSeveralNodesAsOneProgram) {
  graph::FusedGraph g = SquareOfProduct(4);
  std::vector<graph::ValueRef> outputs = {graph::ValueRef{1, 0}};
  std::vector<int> donate = {-1, -1};
  std::shared_ptr<graph::CacheEntry> entry = Cache().GetOrCompile(g.Key(outputs, donate), 0, [&] { return g.Describe(); },
                                     [&] { return g.Lower(outputs, donate); });
  auto x = Upload({1, 2, 3, 4});
  auto w = Upload({2, 2, 2, 2});
  auto launch = graph::Execute(*entry, {x.get(), w.get()});
  ASSERT_EQ(launch.results.size(), 1u);
  EXPECT_EQ(Download(*launch.results[0], 4), (std::vector<float>{4, 16, 36, 64}));
  EXPECT_NE(entry->description.find("fused graph of 2 ops"), std::string::npos);
}

TEST(FusedGraph, KeyIsExactAndDependsOnOutputsAndDonation) {
  graph::FusedGraph a = SquareOfProduct(4), b = SquareOfProduct(4), c = SquareOfProduct(5);
  std::vector<graph::ValueRef> last = {graph::ValueRef{1, 0}};
  std::vector<graph::ValueRef> both = {graph::ValueRef{0, 0}, graph::ValueRef{1, 0}};
  EXPECT_EQ(a.Key(last, {-1, -1}), b.Key(last, {-1, -1}));
  EXPECT_NE(a.Key(last, {-1, -1}), a.Key(both, {-1, -1}));
  EXPECT_NE(a.Key(last, {-1, -1}), a.Key(last, {0, -1}));
  EXPECT_NE(a.Key(last, {-1, -1}), c.Key(last, {-1, -1}));
  // Wiring matters, not only the list of ops: z = y * x instead of y * y.
  graph::FusedGraph d;
  int x = d.AddInput(hlo::TensorType{DType::kF32, {4}});
  int w = d.AddInput(hlo::TensorType{DType::kF32, {4}});
  std::vector<hlo::TensorType> types = {hlo::TensorType{DType::kF32, {4}}};
  int y = d.AddNode(Mul(4), {graph::ValueRef{-1, x}, graph::ValueRef{-1, w}}, types);
  d.AddNode(Mul(4), {graph::ValueRef{y, 0}, graph::ValueRef{-1, x}}, types);
  EXPECT_NE(a.Key(last, {-1, -1}), d.Key(last, {-1, -1}));
}

TEST(FusedGraph, DonatedInputIsConsumed) {
  graph::FusedGraph g = SquareOfProduct(3);
  std::vector<graph::ValueRef> outputs = {graph::ValueRef{1, 0}};
  std::vector<int> donate = {0, -1};  // x's memory holds the result
  graph::Program p = g.Lower(outputs, donate);
  EXPECT_NE(p.text.find("tf.aliasing_output"), std::string::npos);
  std::shared_ptr<graph::CacheEntry> entry = Cache().GetOrCompile(g.Key(outputs, donate), 0, [&] { return g.Describe(); },
                                     [&] { return p; });
  auto x = Upload({1, 2, 3});
  auto w = Upload({1, 1, 1});
  auto launch = graph::Execute(*entry, {x.get(), w.get()});
  EXPECT_TRUE(x->IsDeleted());
  EXPECT_FALSE(w->IsDeleted());
  EXPECT_EQ(Download(*launch.results[0], 3), (std::vector<float>{1, 4, 9}));
}

TEST(FusedGraph, LoweringErrorNamesTheOp) {
  graph::FusedGraph g;
  int x = g.AddInput(hlo::TensorType{DType::kF32, {4}});
  graph::Node bad;
  bad.op = "fused_test.broken";
  bad.args = {hlo::TensorType{DType::kF32, {4}}};
  bad.inputs = {graph::Input{0, Whole(4)}};
  g.AddNode(bad, {graph::ValueRef{-1, x}}, {hlo::TensorType{DType::kF32, {4}}});
  try {
    g.Lower({graph::ValueRef{0, 0}}, {-1});
    FAIL() << "expected a LoweringError";
  } catch (const graph::LoweringError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("fused_test.broken(f32[4])"), std::string::npos) << what;
    EXPECT_NE(what.find("operand shapes do not match"), std::string::npos) << what;
  }
}

TEST(FusedGraph, RejectsArgumentCountMismatch) {
  graph::FusedGraph g;
  EXPECT_THROW(g.AddNode(Mul(2), {graph::ValueRef{-1, 0}}, {}), std::invalid_argument);
}
