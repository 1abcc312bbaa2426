// A small StableHLO builder. It emits one module holding one public function
// `main`, in MLIR's generic op syntax ("stablehlo.add"(%a, %b) : (...) -> ...),
// which every StableHLO version parses the same way. Each op method checks its
// operands and infers the result type, so lowerings can ask a Value its type.
#pragma once

#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "hlo/types.h"

namespace torchtpu::hlo {

class Builder;

struct Value {
  int id = -1;
  TensorType type;
  DType dtype() const { return type.dtype; }
  const Shape& shape() const { return type.shape; }
  int64_t rank() const { return type.rank(); }
};

enum class Compare { kEQ, kNE, kLT, kLE, kGT, kGE };

// Thrown for a malformed op (bad shapes, dtypes, dimensions): a bug in a lowering
// or an invalid user argument that slipped past the ATen checks.
class BuildError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Builds the body of a region (reduce, scatter, sort) from its block arguments.
using RegionFn = std::function<std::vector<Value>(Builder&, const std::vector<Value>&)>;

struct GatherDims {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  int64_t index_vector_dim = 0;
  std::vector<int64_t> slice_sizes;
};

struct ScatterDims {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};

class Builder {
 public:
  explicit Builder(std::string module_name = "torchtpu");

  // Function signature. `alias_output` marks the argument as donated to that
  // result (tf.aliasing_output), so the plugin may write the result in place.
  Value Arg(const TensorType& type, std::optional<int> alias_output = std::nullopt);
  void Return(const std::vector<Value>& results);
  // The whole module; Return must have been called.
  std::string Finish() const;
  const std::vector<TensorType>& result_types() const { return result_types_; }

  // --- constants and iota
  Value Constant(const Literal& value, DType dtype, const Shape& shape = {});
  Value ConstantI64(const std::vector<int64_t>& values, const Shape& shape);
  Value Iota(const TensorType& type, int64_t dim);

  // --- elementwise (operands must already have equal types)
  // `op` is the op name without dialect, e.g. "exponential", "sine"; chlo ops are
  // spelled "chlo.asin" (full name). "abs" of a complex value is real.
  Value Unary(std::string_view op, Value x);
  Value Binary(std::string_view op, Value a, Value b);
  Value Add(Value a, Value b) { return Binary("add", a, b); }
  Value Sub(Value a, Value b) { return Binary("subtract", a, b); }
  Value Mul(Value a, Value b) { return Binary("multiply", a, b); }
  Value Div(Value a, Value b) { return Binary("divide", a, b); }
  Value Max(Value a, Value b) { return Binary("maximum", a, b); }
  Value Min(Value a, Value b) { return Binary("minimum", a, b); }
  Value Cmp(Value a, Value b, Compare direction);
  Value Select(Value pred, Value on_true, Value on_false);
  Value Clamp(Value lo, Value x, Value hi);
  Value Convert(Value x, DType to);
  Value BitcastConvert(Value x, DType to);  // same element size only
  // Complex parts and assembly (stablehlo.real / imag / complex); Real and
  // Imag of a real value are the value and zeros.
  Value Real(Value x);
  Value Imag(Value x);
  Value MakeComplex(Value re, Value im);

  // --- shape
  Value BroadcastInDim(Value x, const Shape& shape, const std::vector<int64_t>& dims);
  // Numpy-style: aligns trailing dimensions of x with `shape`.
  Value BroadcastTo(Value x, const Shape& shape);
  Value Reshape(Value x, const Shape& shape);
  Value Transpose(Value x, const std::vector<int64_t>& permutation);
  Value Slice(Value x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
              const std::vector<int64_t>& strides);
  // Slice of one dimension.
  Value SliceDim(Value x, int64_t dim, int64_t start, int64_t limit, int64_t stride = 1);
  Value DynamicSlice(Value x, const std::vector<Value>& starts, const std::vector<int64_t>& sizes);
  Value DynamicUpdateSlice(Value x, Value update, const std::vector<Value>& starts);
  Value Concatenate(const std::vector<Value>& xs, int64_t dim);
  Value Pad(Value x, Value pad_value, const std::vector<int64_t>& low,
            const std::vector<int64_t>& high, const std::vector<int64_t>& interior);
  Value Reverse(Value x, const std::vector<int64_t>& dims);

  // --- contraction
  Value DotGeneral(Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                   const std::vector<int64_t>& rhs_batch, const std::vector<int64_t>& lhs_contract,
                   const std::vector<int64_t>& rhs_contract, std::optional<DType> result = {});

  // --- regions
  // Reduces `inputs` over `dims` with the binary body; one result per input.
  std::vector<Value> Reduce(const std::vector<Value>& inputs, const std::vector<Value>& inits,
                            const std::vector<int64_t>& dims, const RegionFn& body);
  Value Gather(Value operand, Value indices, const GatherDims& dims);
  Value Scatter(Value operand, Value indices, Value updates, const ScatterDims& dims,
                const RegionFn& combine);
  std::vector<Value> Sort(const std::vector<Value>& inputs, int64_t dim, bool stable,
                          const RegionFn& comparator);
  std::vector<Value> ReduceWindow(const std::vector<Value>& inputs, const std::vector<Value>& inits,
                                  const std::vector<int64_t>& window, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& base_dilations,
                                  const std::vector<int64_t>& window_dilations,
                                  const std::vector<std::pair<int64_t, int64_t>>& padding,
                                  const RegionFn& body);

  // stablehlo.while over `state`: `cond` maps the state to an i1 scalar,
  // `body` to the next state (same types). Returns the final state.
  std::vector<Value> While(const std::vector<Value>& state, const RegionFn& cond, const RegionFn& body);

  // A module-level function beside @main (text of one `func.func`), for
  // func.call; one definition per symbol however often it is added.
  void AddFunction(const std::string& symbol, const std::string& text);

  // Escape hatch: any op in generic form, with the result types given.
  std::vector<Value> Op(std::string_view full_name, const std::vector<Value>& operands,
                        const std::vector<TensorType>& results, std::string_view attributes = "");
  // The same for an op with one region (the collectives' reduction bodies):
  // `body` builds it from block arguments of `region_args`' types.
  std::vector<Value> OpWithRegion(std::string_view full_name, const std::vector<Value>& operands,
                                  const std::vector<TensorType>& results,
                                  const std::vector<TensorType>& region_args, const RegionFn& body,
                                  std::string_view attributes = "");

  // Scalar (rank-0) helper of the same dtype as `like`.
  Value ScalarLike(const Literal& v, Value like) { return Constant(v, like.dtype(), {}); }
  // Splat of `v` with the type of `like`.
  Value Full(const Literal& v, Value like) { return Constant(v, like.dtype(), like.shape()); }

 private:
  Value Fresh(const TensorType& type);
  std::string Name(const Value& v) const;
  void Emit(const std::string& line);
  std::string BuildRegion(const std::vector<TensorType>& arg_types, const RegionFn& fn);

  std::string module_name_;
  int next_id_ = 0;
  std::vector<std::string> args_;
  std::vector<std::string> out_stack_;  // text of the block being built; back() is current
  std::vector<TensorType> result_types_;
  std::string returns_;
  bool finished_ = false;
  std::vector<std::pair<std::string, std::string>> functions_;  // (symbol, text), in order added
};

// Helpers used by several lowerings.
std::string I64Array(const std::vector<int64_t>& v);  // "array<i64: 1, 2>"
std::string I64List(const std::vector<int64_t>& v);   // "[1, 2]"

// --- convolution and constant arrays (added for conv/pool lowerings) ---------

// Window parameters of stablehlo.convolution, one entry per spatial
// dimension; an empty vector means all ones (strides, dilations) or no padding.
struct ConvOptions {
  std::vector<int64_t> window_strides;
  std::vector<std::pair<int64_t, int64_t>> padding;  // (low, high); may be negative
  std::vector<int64_t> lhs_dilation;
  std::vector<int64_t> rhs_dilation;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};

// stablehlo.convolution in PyTorch's layout: lhs [batch, feature, spatial...],
// rhs [out feature, in feature / groups, spatial...], result [batch, feature,
// spatial...]. Free functions on a Builder so the class stays as it was.
Value Convolution(Builder& b, Value lhs, Value rhs, const ConvOptions& options,
                  std::optional<DType> result = {});
// A dense constant of `dtype` with the row-major `values` (floats or ints:
// each is spelled as Literal::Float, so integers must fit a double exactly).
Value ConstantArray(Builder& b, const std::vector<double>& values, DType dtype, const Shape& shape);

}  // namespace torchtpu::hlo
