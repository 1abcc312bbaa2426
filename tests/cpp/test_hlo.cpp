// hlo/: golden text for small modules, type inference, and compile-and-run
// through pjrt/ on the CPU plugin.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "hlo/builder.h"
#include "pjrt/pjrt.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;
using hlo::TensorType;

TEST(HloBuilder, GoldenAddWithDonation) {
  hlo::Builder b("m");
  auto x = b.Arg(TensorType{DType::kF32, {2, 3}}, 0);
  auto y = b.Arg(TensorType{DType::kF32, {2, 3}});
  b.Return({b.Add(x, y)});
  EXPECT_EQ(b.Finish(),
            "module @m {\n"
            "  func.func public @main(%v0: tensor<2x3xf32> {tf.aliasing_output = 0 : i32}, %v1: tensor<2x3xf32>) -> (tensor<2x3xf32>) {\n"
            "    %v2 = \"stablehlo.add\"(%v0, %v1) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>\n"
            "    \"func.return\"(%v2) : (tensor<2x3xf32>) -> ()\n"
            "  }\n"
            "}\n");
}

TEST(HloBuilder, GoldenReduceRegion) {
  hlo::Builder b("m");
  auto x = b.Arg(TensorType{DType::kF32, {4}});
  auto zero = b.Constant(hlo::Literal::Float(0), DType::kF32);
  auto r = b.Reduce({x}, {zero}, {0}, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.Add(a[0], a[1])};
  });
  b.Return(r);
  const std::string text = b.Finish();
  EXPECT_NE(text.find("\"stablehlo.reduce\"(%v0, %v1) ({\n  ^bb0(%v2: tensor<f32>, %v3: tensor<f32>):"), std::string::npos)
      << text;
  EXPECT_NE(text.find("{dimensions = array<i64: 0>} : (tensor<4xf32>, tensor<f32>) -> tensor<f32>"), std::string::npos)
      << text;
}

TEST(HloBuilder, InfersShapes) {
  hlo::Builder b;
  auto a = b.Arg(TensorType{DType::kBF16, {5, 2, 3}});
  auto c = b.Arg(TensorType{DType::kBF16, {5, 3, 7}});
  auto v = b.Arg(TensorType{DType::kF32, {3}});
  EXPECT_EQ(b.DotGeneral(a, c, {0}, {0}, {2}, {1}).shape(), (hlo::Shape{5, 2, 7}));
  EXPECT_EQ(b.Transpose(a, {2, 0, 1}).shape(), (hlo::Shape{3, 5, 2}));
  EXPECT_EQ(b.Slice(a, {0, 0, 0}, {5, 2, 3}, {2, 1, 2}).shape(), (hlo::Shape{3, 2, 2}));
  EXPECT_EQ(b.BroadcastTo(v, {4, 3}).shape(), (hlo::Shape{4, 3}));
}

TEST(HloBuilder, RejectsMismatchedOperands) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {2}});
  auto y = b.Arg(TensorType{DType::kF32, {3}});
  EXPECT_THROW(b.Add(x, y), hlo::BuildError);
  EXPECT_THROW(b.Reshape(x, {3}), hlo::BuildError);
}

TEST(HloLiteral, SpellsNonFiniteAndIntegers) {
  EXPECT_EQ(hlo::Literal::Float(INFINITY).Spell(DType::kF32), "0x7F800000");
  EXPECT_EQ(hlo::Literal::Float(-INFINITY).Spell(DType::kBF16), "0xFF80");
  EXPECT_EQ(hlo::Literal::Float(NAN).Spell(DType::kF64), "0x7FF8000000000000");
  EXPECT_EQ(hlo::Literal::Int(300).Spell(DType::kU8), "44");
  EXPECT_EQ(hlo::Literal::Int(1).Spell(DType::kBool), "true");
  // e4m3fn has no infinity: +-inf spells its largest finite value, as
  // PyTorch's cast saturates.
  EXPECT_EQ(hlo::Literal::Float(INFINITY).Spell(DType::kF8E4M3FN), "0x7E");
  EXPECT_EQ(hlo::Literal::Float(-INFINITY).Spell(DType::kF8E5M2), "0xFC");
  EXPECT_EQ(hlo::Literal::Float(NAN).Spell(DType::kF8E4M3FN), "0x7F");
  // The fnuz formats have one NaN (0x80) and no infinity: PyTorch's cast
  // makes an infinity that NaN.
  EXPECT_EQ(hlo::Literal::Float(NAN).Spell(DType::kF8E4M3FNUZ), "0x80");
  EXPECT_EQ(hlo::Literal::Float(-INFINITY).Spell(DType::kF8E5M2FNUZ), "0x80");
}

TEST(HloTypes, ParseTensorTypeReadsWhatStrWrites) {
  for (const TensorType& t : {TensorType{DType::kF32, {2, 3}}, TensorType{DType::kBool, {}},
                              TensorType{DType::kF8E4M3FN, {7}}, TensorType{DType::kI64, {1, 0, 4}}}) {
    std::optional<TensorType> back = hlo::ParseTensorType(t.str());
    ASSERT_TRUE(back.has_value()) << t.str();
    EXPECT_EQ(*back, t) << t.str();
  }
  EXPECT_FALSE(hlo::ParseTensorType("tensor<?x3xf32>").has_value());
  EXPECT_FALSE(hlo::ParseTensorType("tensor<3xf7>").has_value());
  EXPECT_FALSE(hlo::ParseTensorType("f32").has_value());
}

TEST(HloBuilder, AddedFunctionsFollowMainOncePerSymbol) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {2}});
  const std::string f = "  func.func private @twice(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                        "    %0 = stablehlo.add %a, %a : tensor<2xf32>\n    return %0 : tensor<2xf32>\n  }";
  b.AddFunction("twice", f);
  b.AddFunction("twice", f);
  auto y = b.Op("func.call", {x}, {x.type}, "{callee = @twice}")[0];
  b.Return({y});
  const std::string text = b.Finish();
  EXPECT_EQ(text.find("@twice("), text.rfind("@twice("));
  EXPECT_LT(text.find("func.func public @main"), text.find("func.func private @twice"));
  auto client = testing_plugin::Client();
  auto exe = client->Compile(text, pjrt::CompileOptions{});
  EXPECT_NE(exe, nullptr);
}

TEST(HloBuilder, Float8ConvertsThroughF32AndSaturatesE4M3FN) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF64, {4}});
  auto y = b.Convert(x, DType::kF8E4M3FN);
  EXPECT_EQ(y.type.str(), "tensor<4xf8E4M3FN>");
  auto back = b.Convert(y, DType::kI32);
  b.Return({back});
  std::string text = b.Finish();
  // f64 -> f32 -> clamp(+-448) -> f8 -> f32 -> i32.
  EXPECT_NE(text.find("stablehlo.clamp"), std::string::npos) << text;
  EXPECT_NE(text.find("-> tensor<4xf8E4M3FN>"), std::string::npos) << text;
  EXPECT_NE(text.find("(tensor<4xf8E4M3FN>) -> tensor<4xf32>"), std::string::npos) << text;
  EXPECT_EQ(DTypeSize(DType::kF8E5M2), 1u);
  EXPECT_TRUE(IsFloat(DType::kF8E5M2));
  for (DType fnuz : {DType::kF8E4M3FNUZ, DType::kF8E5M2FNUZ}) {
    EXPECT_EQ(DTypeSize(fnuz), 1u);
    EXPECT_TRUE(IsFloat8(fnuz));
  }
  EXPECT_STREQ(DTypeName(DType::kF8E4M3FNUZ), "f8E4M3FNUZ");
}

namespace {

std::vector<float> RunF32(const std::string& text, const std::vector<std::vector<float>>& inputs,
                          const std::vector<std::vector<int64_t>>& dims, size_t out_numel) {
  auto client = testing_plugin::Client();
  auto exe = client->Compile(text, pjrt::CompileOptions{});
  std::vector<std::unique_ptr<pjrt::Buffer>> bufs;
  std::vector<pjrt::Buffer*> args;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bufs.push_back(client->BufferFromHost(inputs[i].data(), pjrt::ElementType::kF32, dims[i], client->devices()[0]));
    args.push_back(bufs.back().get());
  }
  auto result = exe->Execute({args});
  std::vector<float> out(out_numel);
  result.outputs[0][0]->ToHost(out.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

TEST(HloRun, ElementwiseChloAndReduce) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {4}});
  auto s = b.Unary("chlo.sinh", x);
  auto sum = b.Reduce({s}, {b.Constant(hlo::Literal::Float(0), DType::kF32)}, {0},
                      [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                        return std::vector<hlo::Value>{rb.Add(a[0], a[1])};
                      })[0];
  b.Return({b.Reshape(sum, {1})});
  auto out = RunF32(b.Finish(), {{0.f, 0.5f, -1.f, 2.f}}, {{4}}, 1);
  EXPECT_NEAR(out[0], std::sinh(0.5f) + std::sinh(-1.f) + std::sinh(2.f), 1e-5);
}

TEST(HloRun, DotTransposeSliceGatherScatter) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {2, 3}});
  auto xt = b.Transpose(x, {1, 0});                       // 3x2
  auto p = b.DotGeneral(x, xt, {}, {}, {1}, {0});          // 2x2 = x @ x^T
  auto flat = b.Reshape(p, {4});
  auto idx = b.ConstantI64({3, 0}, {2, 1});
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  g.slice_sizes = {1};
  auto picked = b.Gather(flat, idx, g);                    // [p11, p00]
  hlo::ScatterDims sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  auto upd = b.Scatter(flat, idx, picked, sd, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.Add(a[0], a[1])};
  });
  b.Return({b.Concatenate({picked, b.SliceDim(upd, 0, 0, 4, 3)}, 0)});
  auto out = RunF32(b.Finish(), {{1, 2, 3, 4, 5, 6}}, {{2, 3}}, 4);
  // x @ x^T = [[14, 32], [32, 77]]
  EXPECT_EQ(out, (std::vector<float>{77, 14, 28, 154}));
}

// --- convolution and constant arrays --------------------------------------------

TEST(HloBuilder, GoldenConvolution) {
  hlo::Builder b("m");
  auto x = b.Arg(TensorType{DType::kF32, {2, 4, 5, 6}});
  auto w = b.Arg(TensorType{DType::kF32, {6, 2, 3, 3}});
  hlo::ConvOptions o;
  o.window_strides = {2, 1};
  o.padding = {{1, 1}, {0, -1}};
  o.rhs_dilation = {1, 2};
  o.feature_group_count = 2;
  auto y = hlo::Convolution(b, x, w, o);
  EXPECT_EQ(y.shape(), (hlo::Shape{2, 6, 3, 1}));
  b.Return({y});
  const std::string text = b.Finish();
  EXPECT_NE(text.find("\"stablehlo.convolution\"(%v0, %v1) {batch_group_count = 1 : i64, dimension_numbers = "
                      "#stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 2 : i64, "
                      "lhs_dilation = array<i64: 1, 1>, padding = dense<[[1, 1], [0, -1]]> : tensor<2x2xi64>, "
                      "rhs_dilation = array<i64: 1, 2>, window_strides = array<i64: 2, 1>} : "
                      "(tensor<2x4x5x6xf32>, tensor<6x2x3x3xf32>) -> tensor<2x6x3x1xf32>"),
            std::string::npos)
      << text;
  hlo::Builder bad;
  auto a = bad.Arg(TensorType{DType::kF32, {1, 3, 4}});
  auto k = bad.Arg(TensorType{DType::kF32, {2, 2, 3}});
  EXPECT_THROW(hlo::Convolution(bad, a, k, {}), hlo::BuildError);  // 3 features, 2 per kernel
}

TEST(HloRun, ConvolutionAndConstantArray) {
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {1, 1, 5}});
  auto w = hlo::ConstantArray(b, {1, 0, -1}, DType::kF32, {1, 1, 3});
  hlo::ConvOptions o;
  o.window_strides = {2};
  o.padding = {{1, 1}};
  auto y = hlo::Convolution(b, x, w, o);  // windows over [0, 1, 2, 3, 4, 5, 0] at 0, 2, 4
  // lhs_dilation 2 (a transposed convolution) and negative padding.
  hlo::ConvOptions t;
  t.lhs_dilation = {2};
  t.padding = {{-1, 0}};
  auto z = hlo::Convolution(b, x, hlo::ConstantArray(b, {1, 10}, DType::kF32, {1, 1, 2}), t);
  b.Return({b.Concatenate({b.Reshape(y, {3}), b.Reshape(z, {7})}, 0)});
  auto out = RunF32(b.Finish(), {{1, 2, 3, 4, 5}}, {{1, 1, 5}}, 10);
  // z: windows of [0, 2, 0, 3, 0, 4, 0, 5] (dilated [1 0 2 0 3 0 4 0 5], first dropped).
  EXPECT_EQ(out, (std::vector<float>{-2, -2, 4, 20, 2, 30, 3, 40, 4, 50}));
}

TEST(HloBuilder, WhileRunsItsBodyUntilTheConditionFails) {
  // acc starts at x and gains x five times: 6x.
  hlo::Builder b;
  auto x = b.Arg(TensorType{DType::kF32, {3}});
  auto zero = b.Constant(hlo::Literal::Int(0), DType::kI64, {});
  auto state = b.While(
      {zero, x, x},
      [](hlo::Builder& rb, const std::vector<hlo::Value>& s) {
        return std::vector<hlo::Value>{rb.Cmp(s[0], rb.Constant(hlo::Literal::Int(5), DType::kI64, {}),
                                              hlo::Compare::kLT)};
      },
      [](hlo::Builder& rb, const std::vector<hlo::Value>& s) {
        return std::vector<hlo::Value>{rb.Add(s[0], rb.Constant(hlo::Literal::Int(1), DType::kI64, {})),
                                       rb.Add(s[1], s[2]), s[2]};
      });
  b.Return({state[1]});
  EXPECT_EQ(RunF32(b.Finish(), {{1, 2, -3}}, {{3}}, 3), (std::vector<float>{6, 12, -18}));
}

// complex32 has no StableHLO/PJRT element type: Convert packs it into a ui32
// per element, the real part's f16 bits low, the imaginary part's high (the
// host's interleaved complex<Half> bytes), and unpacks it exactly.
TEST(HloRun, Complex32PacksF16PartsAsTheHostLayout) {
  hlo::Builder b;
  auto re = b.Arg(TensorType{DType::kF32, {3}});
  auto im = b.Arg(TensorType{DType::kF32, {3}});
  auto packed = b.Convert(b.MakeComplex(re, im), DType::kC32);
  EXPECT_EQ(packed.type.str(), "tensor<3xui32>");
  EXPECT_EQ(DTypeSize(DType::kC32), 4u);
  EXPECT_FALSE(IsComplex(DType::kC32));  // nothing computes on the packed value
  auto back = b.Convert(packed, DType::kF32);  // the real part, through complex64
  b.Return({packed, back});
  auto client = testing_plugin::Client();
  auto exe = client->Compile(b.Finish(), pjrt::CompileOptions{});
  const std::vector<float> r = {1.0f, -2.0f, 0.5f}, i = {0.5f, 1.0f, -2.0f};
  auto rb = client->BufferFromHost(r.data(), pjrt::ElementType::kF32, {3}, client->devices()[0]);
  auto ib = client->BufferFromHost(i.data(), pjrt::ElementType::kF32, {3}, client->devices()[0]);
  auto result = exe->Execute({{rb.get(), ib.get()}});
  std::vector<uint32_t> bits(3);
  result.outputs[0][0]->ToHost(bits.data(), bits.size() * sizeof(uint32_t));
  // f16: 1.0 = 0x3C00, -2.0 = 0xC000, 0.5 = 0x3800.
  EXPECT_EQ(bits, (std::vector<uint32_t>{0x38003C00u, 0x3C00C000u, 0xC0003800u}));
  std::vector<float> real(3);
  result.outputs[0][1]->ToHost(real.data(), real.size() * sizeof(float));
  EXPECT_EQ(real, r);
}
