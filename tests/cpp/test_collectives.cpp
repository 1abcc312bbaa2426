// lower/collectives: the c10d_* lowerings compiled for N replicas and run on
// N devices of one CPU client (the plugin's in-process collectives), each
// replica's result checked against host arithmetic. This is the device half
// of the native transport; the cross-process half needs a plugin with
// distributed clients (docs/distributed.md).
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "graph/lowering.h"
#include "lower/collectives.h"
#include "test_plugin.h"

using namespace torchtpu;
using hlo::DType;
using lower::CollectiveReduce;
using lower::ReplicaGroups;

namespace {

constexpr int kReplicas = 4;

std::shared_ptr<pjrt::Client> Client4() {
  static auto client = pjrt::Client::Create(testing_plugin::Plugin(), {{"cpu_device_count", int64_t{kReplicas}}});
  return client;
}

template <typename T>
struct Elem;
template <> struct Elem<float> {
  static constexpr DType dtype = DType::kF32;
  static constexpr pjrt::ElementType type = pjrt::ElementType::kF32;
};
template <> struct Elem<int64_t> {
  static constexpr DType dtype = DType::kI64;
  static constexpr pjrt::ElementType type = pjrt::ElementType::kS64;
};
template <> struct Elem<bool> {
  static constexpr DType dtype = DType::kBool;
  static constexpr pjrt::ElementType type = pjrt::ElementType::kPred;
};
template <> struct Elem<std::complex<float>> {
  static constexpr DType dtype = DType::kC64;
  static constexpr pjrt::ElementType type = pjrt::ElementType::kC64;
};

// A node of `op` over one dense input of `shape` (as the kernels record it:
// a flat argument read through a view).
graph::Node CollectiveNode(const std::string& op, DType dtype, const std::vector<int64_t>& shape,
                           std::vector<graph::Attr> attrs) {
  graph::Node n;
  n.op = op;
  n.attrs = std::move(attrs);
  n.args = {hlo::TensorType{dtype, {hlo::NumElements(shape)}}};
  graph::View v;
  v.sizes = shape;
  v.strides.assign(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d) v.strides[d] = v.strides[d + 1] * shape[d + 1];
  n.inputs = {graph::Input{0, v}};
  return n;
}

// Runs `node` with `inputs[r]` on replica r (device r); returns each
// replica's flat result.
template <typename In, typename Out = In>
std::vector<std::vector<Out>> RunReplicated(const graph::Node& node, const std::vector<std::vector<In>>& inputs) {
  auto client = Client4();
  graph::Program program = graph::LowerNode(node);
  pjrt::CompileOptions options;
  options.num_replicas = static_cast<int>(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) options.device_assignment.push_back(client->device_id(client->devices()[r]));
  auto exe = client->Compile(program.text, options);
  std::vector<std::unique_ptr<pjrt::Buffer>> owned;
  std::vector<std::vector<pjrt::Buffer*>> args(inputs.size());
  for (size_t r = 0; r < inputs.size(); ++r) {
    // std::vector<bool> has no data(): bools travel as one byte each.
    std::vector<uint8_t> bytes(inputs[r].size() * sizeof(In));
    for (size_t i = 0; i < inputs[r].size(); ++i) {
      In v = inputs[r][i];
      std::memcpy(bytes.data() + i * sizeof(In), &v, sizeof(In));
    }
    owned.push_back(client->BufferFromHost(bytes.data(), Elem<In>::type, {static_cast<int64_t>(inputs[r].size())},
                                           client->devices()[r]));
    args[r].push_back(owned.back().get());
  }
  pjrt::ExecuteResult result = exe->Execute(args);
  std::vector<std::vector<Out>> out;
  const int64_t n = program.result_types.at(0).numel();
  for (size_t r = 0; r < inputs.size(); ++r) {
    std::vector<uint8_t> bytes(static_cast<size_t>(n) * sizeof(Out));
    result.outputs[r][0]->ToHost(bytes.data(), bytes.size());
    std::vector<Out> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      Out v;
      std::memcpy(&v, bytes.data() + i * sizeof(Out), sizeof(Out));
      values[i] = v;
    }
    out.push_back(std::move(values));
  }
  return out;
}

const ReplicaGroups kAll = {{0, 1, 2, 3}};
const ReplicaGroups kPairs = {{0, 2}, {1, 3}};

std::vector<std::vector<float>> FloatInputs() {
  return {{1.5f, -2.0f, 3.0f}, {0.5f, 4.0f, -1.0f}, {2.0f, 0.25f, 8.0f}, {-3.0f, 1.0f, 0.5f}};
}

}  // namespace

TEST(Collectives, AllReduceEveryFloatOpOverAllReplicas) {
  const auto in = FloatInputs();
  for (auto op : {CollectiveReduce::kSum, CollectiveReduce::kAvg, CollectiveReduce::kProduct, CollectiveReduce::kMin,
                  CollectiveReduce::kMax}) {
    auto out = RunReplicated<float>(
        CollectiveNode("c10d_all_reduce", DType::kF32, {3}, {static_cast<int64_t>(op), lower::EncodeGroups(kAll)}), in);
    for (size_t i = 0; i < 3; ++i) {
      float want = in[0][i];
      for (int r = 1; r < kReplicas; ++r) {
        float v = in[r][i];
        switch (op) {
          case CollectiveReduce::kSum: case CollectiveReduce::kAvg: want += v; break;
          case CollectiveReduce::kProduct: want *= v; break;
          case CollectiveReduce::kMin: want = std::min(want, v); break;
          default: want = std::max(want, v); break;
        }
      }
      if (op == CollectiveReduce::kAvg) want /= kReplicas;
      for (int r = 0; r < kReplicas; ++r) {
        EXPECT_FLOAT_EQ(out[r][i], want) << "op " << static_cast<int>(op) << " replica " << r << " element " << i;
      }
    }
  }
}

TEST(Collectives, AllReduceWithinEachGroup) {
  const auto in = FloatInputs();
  auto out = RunReplicated<float>(CollectiveNode("c10d_all_reduce", DType::kF32, {3},
                                                 {int64_t{0}, lower::EncodeGroups(kPairs)}),
                                  in);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ(out[0][i], in[0][i] + in[2][i]);
    EXPECT_FLOAT_EQ(out[2][i], in[0][i] + in[2][i]);
    EXPECT_FLOAT_EQ(out[1][i], in[1][i] + in[3][i]);
    EXPECT_FLOAT_EQ(out[3][i], in[1][i] + in[3][i]);
  }
}

TEST(Collectives, AllReduceIntegersBitwiseAndBool) {
  const std::vector<std::vector<int64_t>> in = {{12, -7, int64_t{1} << 40}, {10, 3, 5}, {6, 1, 9}, {3, -2, 17}};
  const auto groups = lower::EncodeGroups(kAll);
  auto sum = RunReplicated<int64_t>(CollectiveNode("c10d_all_reduce", DType::kI64, {3}, {int64_t{0}, groups}), in);
  auto band = RunReplicated<int64_t>(CollectiveNode("c10d_all_reduce", DType::kI64, {3}, {int64_t{5}, groups}), in);
  auto bor = RunReplicated<int64_t>(CollectiveNode("c10d_all_reduce", DType::kI64, {3}, {int64_t{6}, groups}), in);
  auto bxor = RunReplicated<int64_t>(CollectiveNode("c10d_all_reduce", DType::kI64, {3}, {int64_t{7}, groups}), in);
  for (size_t i = 0; i < 3; ++i) {
    int64_t s = 0, a = -1, o = 0, x = 0;
    for (int r = 0; r < kReplicas; ++r) {
      s += in[r][i];
      a &= in[r][i];
      o |= in[r][i];
      x ^= in[r][i];
    }
    for (int r = 0; r < kReplicas; ++r) {
      EXPECT_EQ(sum[r][i], s);
      EXPECT_EQ(band[r][i], a);
      EXPECT_EQ(bor[r][i], o);
      EXPECT_EQ(bxor[r][i], x);
    }
  }
  // bool: SUM and MAX are `or`, PRODUCT and MIN `and` (gloo's bool semantics).
  const std::vector<std::vector<bool>> flags = {{true, false, false}, {true, false, true}, {true, false, false},
                                                {true, false, false}};
  auto any = RunReplicated<bool>(CollectiveNode("c10d_all_reduce", DType::kBool, {3}, {int64_t{0}, groups}), flags);
  auto all = RunReplicated<bool>(CollectiveNode("c10d_all_reduce", DType::kBool, {3}, {int64_t{3}, groups}), flags);
  auto odd = RunReplicated<bool>(CollectiveNode("c10d_all_reduce", DType::kBool, {3}, {int64_t{7}, groups}), flags);
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_EQ(any[r], (std::vector<bool>{true, false, true}));
    EXPECT_EQ(all[r], (std::vector<bool>{true, false, false}));
    EXPECT_EQ(odd[r], (std::vector<bool>{false, false, true}));
  }
}

TEST(Collectives, BitwiseReduceScatterOfInt64) {
  // Replica r holds {1 << r, -1 << r, r, 3}: each member keeps one pair of the OR.
  std::vector<std::vector<int64_t>> in;
  for (int64_t r = 0; r < kReplicas; ++r) {
    in.push_back({int64_t{1} << r, -(int64_t{1} << r), r, 3, r * r, -r, 7 - r, int64_t{1} << 62});
  }
  auto out = RunReplicated<int64_t>(
      CollectiveNode("c10d_reduce_scatter", DType::kI64, {8}, {int64_t{0}, int64_t{6}, lower::EncodeGroups(kAll)}),
      in);
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_EQ(out[r].size(), 2u);
    for (int j = 0; j < 2; ++j) {
      int64_t want = 0;
      for (int s = 0; s < kReplicas; ++s) want |= in[s][r * 2 + j];
      EXPECT_EQ(out[r][j], want) << "replica " << r << " element " << j;
    }
  }
}

TEST(Collectives, RefusesWhatC10dRefuses) {
  const auto groups = lower::EncodeGroups(kAll);
  auto lower_error = [](const graph::Node& n) {
    try {
      graph::LowerNode(n);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(lower_error(CollectiveNode("c10d_all_reduce", DType::kI64, {3}, {int64_t{1}, groups})).find("AVG"),
            std::string::npos);
  EXPECT_NE(lower_error(CollectiveNode("c10d_all_reduce", DType::kF32, {3}, {int64_t{5}, groups})).find("bitwise"),
            std::string::npos);
  EXPECT_NE(lower_error(CollectiveNode("c10d_reduce_scatter", DType::kF32, {6}, {int64_t{0}, int64_t{0}, groups}))
                .find("does not divide by the group size 4"),
            std::string::npos);
  EXPECT_THROW(lower::EncodeGroups({{0, 1, 2}, {3}}), hlo::BuildError);
  EXPECT_NE(lower_error(CollectiveNode("c10d_all_reduce", DType::kF32, {3}, {int64_t{0}, std::vector<int64_t>{3, 0, 1}}))
                .find("malformed replica groups"),
            std::string::npos);
  EXPECT_NE(lower_error(CollectiveNode("c10d_broadcast", DType::kF32, {3}, {int64_t{4}, groups})).find("root 4"),
            std::string::npos);
}

TEST(Collectives, AllGatherAlongEitherDim) {
  // Each replica holds a 2x2 block [[10r, 10r+1], [10r+2, 10r+3]].
  std::vector<std::vector<float>> in;
  for (int r = 0; r < kReplicas; ++r) in.push_back({10.f * r, 10.f * r + 1, 10.f * r + 2, 10.f * r + 3});
  const auto groups = lower::EncodeGroups(kAll);
  auto rows = RunReplicated<float>(CollectiveNode("c10d_all_gather", DType::kF32, {2, 2}, {int64_t{0}, groups}), in);
  auto cols = RunReplicated<float>(CollectiveNode("c10d_all_gather", DType::kF32, {2, 2}, {int64_t{1}, groups}), in);
  std::vector<float> want_rows, want_cols;
  for (int r = 0; r < kReplicas; ++r) want_rows.insert(want_rows.end(), in[r].begin(), in[r].end());
  for (int row = 0; row < 2; ++row) {
    for (int r = 0; r < kReplicas; ++r) {
      want_cols.push_back(in[r][row * 2]);
      want_cols.push_back(in[r][row * 2 + 1]);
    }
  }
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_EQ(rows[r], want_rows);
    EXPECT_EQ(cols[r], want_cols);
  }
  // A scalar gathers into a vector.
  auto scalars = RunReplicated<float>(CollectiveNode("c10d_all_gather", DType::kF32, {}, {int64_t{0}, groups}),
                                      std::vector<std::vector<float>>{{1.f}, {2.f}, {3.f}, {4.f}});
  for (int r = 0; r < kReplicas; ++r) EXPECT_EQ(scalars[r], (std::vector<float>{1, 2, 3, 4}));
  // Within pairs {0, 2} and {1, 3}: group order, not replica order.
  auto paired = RunReplicated<float>(
      CollectiveNode("c10d_all_gather", DType::kF32, {2, 2}, {int64_t{0}, lower::EncodeGroups(kPairs)}), in);
  std::vector<float> want02 = in[0], want13 = in[1];
  want02.insert(want02.end(), in[2].begin(), in[2].end());
  want13.insert(want13.end(), in[3].begin(), in[3].end());
  EXPECT_EQ(paired[0], want02);
  EXPECT_EQ(paired[2], want02);
  EXPECT_EQ(paired[1], want13);
  EXPECT_EQ(paired[3], want13);
}

TEST(Collectives, ReduceScatterGivesEachMemberItsBlockOfTheSum) {
  std::vector<std::vector<float>> in;
  for (int r = 0; r < kReplicas; ++r) {
    std::vector<float> v;
    for (int i = 0; i < 8; ++i) v.push_back(static_cast<float>(r * 100 + i));
    in.push_back(v);
  }
  auto out = RunReplicated<float>(
      CollectiveNode("c10d_reduce_scatter", DType::kF32, {8}, {int64_t{0}, int64_t{0}, lower::EncodeGroups(kAll)}), in);
  for (int r = 0; r < kReplicas; ++r) {
    ASSERT_EQ(out[r].size(), 2u);
    for (int j = 0; j < 2; ++j) {
      float want = 0;
      for (int s = 0; s < kReplicas; ++s) want += in[s][r * 2 + j];
      EXPECT_FLOAT_EQ(out[r][j], want);
    }
  }
}

TEST(Collectives, AllToAllSendsBlockJToMemberJ) {
  std::vector<std::vector<int64_t>> in;
  for (int r = 0; r < kReplicas; ++r) in.push_back({10 * r, 10 * r + 1, 10 * r + 2, 10 * r + 3});
  auto out = RunReplicated<int64_t>(
      CollectiveNode("c10d_all_to_all", DType::kI64, {4}, {int64_t{0}, int64_t{0}, lower::EncodeGroups(kAll)}), in);
  for (int r = 0; r < kReplicas; ++r) {
    EXPECT_EQ(out[r], (std::vector<int64_t>{r, 10 + r, 20 + r, 30 + r})) << "replica " << r;
  }
}

TEST(Collectives, PermuteRingAndPartialPairs) {
  const auto in = FloatInputs();
  auto ring = RunReplicated<float>(
      CollectiveNode("c10d_permute", DType::kF32, {3}, {std::vector<int64_t>{0, 1, 1, 2, 2, 3, 3, 0}}), in);
  for (int r = 0; r < kReplicas; ++r) EXPECT_EQ(ring[r], in[(r + kReplicas - 1) % kReplicas]);
  // A send from 2 to 0 only: replica 0 receives, every other replica gets zeros.
  auto one = RunReplicated<float>(CollectiveNode("c10d_permute", DType::kF32, {3}, {std::vector<int64_t>{2, 0}}), in);
  EXPECT_EQ(one[0], in[2]);
  for (int r = 1; r < kReplicas; ++r) EXPECT_EQ(one[r], (std::vector<float>{0, 0, 0}));
}

TEST(Collectives, BroadcastCopiesTheRootsBitsWithinEachGroup) {
  const float nan_payload = [] {
    uint32_t bits = 0x7FC00123u;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  }();
  std::vector<std::vector<float>> in = {
      {1.f, 2.f, 3.f}, {-0.0f, nan_payload, std::numeric_limits<float>::infinity()}, {7.f, 8.f, 9.f}, {4.f, -5.f, 6.f}};
  auto bits_equal = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
  };
  auto all = RunReplicated<float>(
      CollectiveNode("c10d_broadcast", DType::kF32, {3}, {int64_t{1}, lower::EncodeGroups(kAll)}), in);
  for (int r = 0; r < kReplicas; ++r) EXPECT_TRUE(bits_equal(all[r], in[1])) << "replica " << r;
  // Groups {0, 2} and {1, 3}, root position 1: replicas 2 and 3 are the roots.
  auto paired = RunReplicated<float>(
      CollectiveNode("c10d_broadcast", DType::kF32, {3}, {int64_t{1}, lower::EncodeGroups(kPairs)}), in);
  EXPECT_TRUE(bits_equal(paired[0], in[2]));
  EXPECT_TRUE(bits_equal(paired[2], in[2]));
  EXPECT_TRUE(bits_equal(paired[1], in[3]));
  EXPECT_TRUE(bits_equal(paired[3], in[3]));
  // bool and complex take their own paths (an `and` with the root flag; a gather).
  const std::vector<std::vector<bool>> flags = {{true, false}, {false, true}, {true, true}, {false, false}};
  auto flag_out = RunReplicated<bool>(
      CollectiveNode("c10d_broadcast", DType::kBool, {2}, {int64_t{2}, lower::EncodeGroups(kAll)}), flags);
  for (int r = 0; r < kReplicas; ++r) EXPECT_EQ(flag_out[r], flags[2]);
  using C = std::complex<float>;
  const std::vector<std::vector<C>> zs = {{C(1, 2), C(3, 4)}, {C(-1, 0.5f), C(0, -0.0f)}, {C(5, 6), C(7, 8)},
                                          {C(9, 1), C(2, 3)}};
  auto z_out = RunReplicated<C>(
      CollectiveNode("c10d_broadcast", DType::kC64, {2}, {int64_t{3}, lower::EncodeGroups(kAll)}), zs);
  for (int r = 0; r < kReplicas; ++r) EXPECT_EQ(z_out[r], zs[3]);
}
