// lower/: the op lowerings, torch-free, driven from C++ exactly as the ATen
// kernels drive them (a node with attributes and operand views), compiled and
// run on the CPU plugin, checked against host arithmetic.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/compile_cache.h"
#include "graph/lowering.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;

namespace {

using testing_plugin::Download;
using testing_plugin::Upload;

graph::CompileCache& Cache() {
  static graph::CompileCache cache(testing_plugin::Client());
  return cache;
}

graph::View Dense(std::vector<int64_t> sizes) {
  graph::View v;
  v.sizes = sizes;
  int64_t stride = 1;
  v.strides.assign(sizes.size(), 1);
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    v.strides[d] = stride;
    stride *= sizes[d];
  }
  return v;
}



// Runs `node` on f32 buffers and returns its results.
std::vector<std::unique_ptr<pjrt::Buffer>> RunNode(const graph::Node& node, const std::vector<std::vector<float>>& args) {
  std::shared_ptr<graph::CacheEntry> entry = Cache().Get(node, 0);
  std::vector<std::unique_ptr<pjrt::Buffer>> buffers;
  std::vector<pjrt::Buffer*> raw;
  for (const auto& a : args) {
    buffers.push_back(Upload(a));
    raw.push_back(buffers.back().get());
  }
  return std::move(graph::Execute(*entry, raw).results);
}

}  // namespace

TEST(Lowerings, AreRegisteredForEveryFamily) {
  for (const char* op : {"ew.add", "ew.where", "matmul", "sort", "cat", "arange", "copy", "resize_flat"}) {
    EXPECT_NE(graph::FindLowering(op), nullptr) << op;
  }
}

TEST(Lowerings, ElementwiseAddBroadcastsATransposedView) {
  // x (2x3, read transposed as 3x2) + y (2): the elementwise family converts
  // and broadcasts its operands itself.
  graph::Node n;
  n.op = "ew.add";
  n.attrs = {static_cast<int64_t>(DType::kF32), static_cast<int64_t>(DType::kF32)};
  n.args = {hlo::TensorType{DType::kF32, {6}}, hlo::TensorType{DType::kF32, {2}}};
  graph::View t;
  t.sizes = {3, 2};
  t.strides = {1, 3};
  n.inputs = {graph::Input{0, t}, graph::Input{1, Dense({2})}};
  auto out = RunNode(n, {{0, 1, 2, 3, 4, 5}, {10, 20}});
  EXPECT_EQ(Download<float>(*out[0], 6), (std::vector<float>{10, 23, 11, 24, 12, 25}));
}

TEST(Lowerings, MatmulMatchesHostProduct) {
  graph::Node n;
  n.op = "matmul";
  n.attrs = {std::string("mm"), false, false};
  n.args = {hlo::TensorType{DType::kF32, {6}}, hlo::TensorType{DType::kF32, {6}}};
  n.inputs = {graph::Input{0, Dense({2, 3})}, graph::Input{1, Dense({3, 2})}};
  auto out = RunNode(n, {{1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1}});
  EXPECT_EQ(Download<float>(*out[0], 4), (std::vector<float>{4, 5, 10, 11}));
}

TEST(Lowerings, SortOrdersNanLastAndReturnsIndices) {
  graph::Node n;
  n.op = "sort";
  n.attrs = {int64_t{0}, false, int64_t{-1}};
  n.args = {hlo::TensorType{DType::kF32, {4}}};
  n.inputs = {graph::Input{0, Dense({4})}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto out = RunNode(n, {{3, nan, -1, 2}});
  auto values = Download<float>(*out[0], 4);
  EXPECT_EQ(std::vector<float>(values.begin(), values.begin() + 3), (std::vector<float>{-1, 2, 3}));
  EXPECT_TRUE(std::isnan(values[3]));
  EXPECT_EQ(Download<int64_t>(*out[1], 4), (std::vector<int64_t>{2, 3, 0, 1}));
}

TEST(Lowerings, CatConvertsToTheResultType) {
  graph::Node n;
  n.op = "cat";
  n.attrs = {int64_t{0}, static_cast<int64_t>(DType::kF32)};
  n.args = {hlo::TensorType{DType::kF32, {2}}, hlo::TensorType{DType::kF32, {3}}};
  n.inputs = {graph::Input{0, Dense({2})}, graph::Input{1, Dense({3})}};
  auto out = RunNode(n, {{1, 2}, {3, 4, 5}});
  EXPECT_EQ(Download<float>(*out[0], 5), (std::vector<float>{1, 2, 3, 4, 5}));
}

TEST(Lowerings, BadOperandsRaiseALoweringErrorNamingTheOp) {
  graph::Node n;
  n.op = "matmul";
  n.attrs = {std::string("mm"), false, false};
  n.args = {hlo::TensorType{DType::kF32, {6}}, hlo::TensorType{DType::kF32, {8}}};
  n.inputs = {graph::Input{0, Dense({2, 3})}, graph::Input{1, Dense({4, 2})}};
  try {
    graph::LowerNode(n);
    FAIL() << "expected a LoweringError";
  } catch (const graph::LoweringError& e) {
    EXPECT_NE(std::string(e.what()).find("matmul(f32[2,3], f32[4,2])"), std::string::npos) << e.what();
  }
}

// The special-function family (lower/special.cpp) against the host's libm:
// frexp exactly (a subnormal included), nextafter exactly, erfcx to 4 f32 ulps.
TEST(Lowerings, SpecialFrexpNextafterErfcxMatchLibm) {
  const std::vector<float> x = {0.75f, -3.0f, 1e-40f, 0.0f, 12345.0f, 2.5f};
  const std::vector<float> y = {1.0f, -4.0f, 0.0f, -1.0f, 0.0f, 2.5f};
  auto node = [&](const char* op, size_t operands) {
    graph::Node n;
    n.op = op;
    n.attrs = {static_cast<int64_t>(DType::kF32), static_cast<int64_t>(DType::kF32)};
    for (size_t i = 0; i < operands; ++i) {
      n.args.push_back(hlo::TensorType{DType::kF32, {6}});
      n.inputs.push_back(graph::Input{static_cast<int>(i), Dense({6})});
    }
    return n;
  };
  auto fr = RunNode(node("special.frexp", 1), {x});
  auto m = Download<float>(*fr[0], 6);
  auto e = Download<int32_t>(*fr[1], 6);
  auto na = Download<float>(*RunNode(node("special.nextafter", 2), {x, y})[0], 6);
  auto cx = Download<float>(*RunNode(node("special.erfcx", 1), {x})[0], 6);
  for (size_t i = 0; i < x.size(); ++i) {
    int want_e = 0;
    float want_m = std::frexp(x[i], &want_e);
    EXPECT_EQ(m[i], want_m) << x[i];
    EXPECT_EQ(e[i], want_e) << x[i];
    EXPECT_EQ(na[i], std::nextafter(x[i], y[i])) << x[i];
    // Large x: the first terms of the asymptotic series (exp(x^2) overflows).
    const double xd = x[i];
    double want = xd < 20 ? std::exp(xd * xd) * std::erfc(xd)
                          : (1 - 1 / (2 * xd * xd) + 3 / (4 * xd * xd * xd * xd)) / (xd * std::sqrt(M_PI));
    EXPECT_NEAR(cx[i], want, 4 * 1.2e-7 * std::fabs(want)) << x[i];
  }
}

// The general eigendecomposition (lower/linalg_eig.cpp) of two 2x2 matrices in
// one batch: a rotation by 90 degrees (eigenvalues +-i, which no real shift
// finds) and an upper-triangular one (3 and -2); then a batch with a NaN, which
// gets info -1 and NaN eigenvalues beside a good matrix.
TEST(Lowerings, LinalgEigFindsComplexPairsAndFlagsNonFiniteInput) {
  graph::Node n;
  n.op = "linalg.eig";
  n.attrs = {true};
  n.args = {hlo::TensorType{DType::kF32, {8}}};
  n.inputs = {graph::Input{0, Dense({2, 2, 2})}};
  auto out = RunNode(n, {{0, 1, -1, 0, 3, 5, 0, -2}});
  auto w = Download<float>(*out[0], 8);  // complex64: (re, im) pairs, [2, 2]
  auto v = Download<float>(*out[1], 16);
  EXPECT_EQ(Download<int32_t>(*out[2], 2), (std::vector<int32_t>{0, 0}));
  EXPECT_NEAR(w[0], 0, 1e-6);
  EXPECT_NEAR(w[2], 0, 1e-6);
  EXPECT_NEAR(std::fabs(w[1]), 1, 1e-6);
  EXPECT_NEAR(w[1] + w[3], 0, 1e-6);  // a conjugate pair
  const std::vector<float> tri = {w[4], w[6]};
  EXPECT_NEAR(std::max(tri[0], tri[1]), 3, 1e-5);
  EXPECT_NEAR(std::min(tri[0], tri[1]), -2, 1e-5);
  // Each eigenvector of the rotation solves A x = w x: x1 = w x0 for row 0.
  for (int k = 0; k < 2; ++k) {
    const float x0r = v[2 * k], x0i = v[2 * k + 1], x1r = v[4 + 2 * k], x1i = v[4 + 2 * k + 1];
    const float wr = w[2 * k], wi = w[2 * k + 1];
    EXPECT_NEAR(x1r, wr * x0r - wi * x0i, 1e-5);
    EXPECT_NEAR(x1i, wr * x0i + wi * x0r, 1e-5);
    EXPECT_NEAR(x0r * x0r + x0i * x0i + x1r * x1r + x1i * x1i, 1, 1e-5);
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto bad = RunNode(n, {{1, nan, 0, 1, 2, 0, 0, 5}});
  EXPECT_EQ(Download<int32_t>(*bad[2], 2), (std::vector<int32_t>{-1, 0}));
  auto wb = Download<float>(*bad[0], 8);
  EXPECT_TRUE(std::isnan(wb[0]) && std::isnan(wb[3]));
  EXPECT_NEAR(std::max(wb[4], wb[6]), 5, 1e-6);
  EXPECT_NEAR(std::min(wb[4], wb[6]), 2, 1e-6);
}
