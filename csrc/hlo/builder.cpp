#include "hlo/builder.h"

#include <algorithm>
#include <limits>
#include <sstream>

namespace torchtpu::hlo {

namespace {

std::string Join(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s;
}

std::string TypeList(const std::vector<TensorType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) {
    if (i) s += ", ";
    s += types[i].str();
  }
  return s;
}

std::string ShapeStr(const Shape& s) { return "[" + Join(s) + "]"; }

void Check(bool ok, const std::string& what) {
  if (!ok) throw BuildError(what);
}

const char* CompareName(Compare c) {
  switch (c) {
    case Compare::kEQ: return "EQ";
    case Compare::kNE: return "NE";
    case Compare::kLT: return "LT";
    case Compare::kLE: return "LE";
    case Compare::kGT: return "GT";
    case Compare::kGE: return "GE";
  }
  return "EQ";
}

bool ReturnsBool(std::string_view op) {
  return op == "is_finite" || op == "chlo.is_inf" || op == "chlo.is_neg_inf" ||
         op == "chlo.is_pos_inf";
}

}  // namespace

std::string I64Array(const std::vector<int64_t>& v) {
  return v.empty() ? "array<i64>" : "array<i64: " + Join(v) + ">";
}
std::string I64List(const std::vector<int64_t>& v) { return "[" + Join(v) + "]"; }

Builder::Builder(std::string module_name) : module_name_(std::move(module_name)) {
  out_stack_.emplace_back();
}

Value Builder::Fresh(const TensorType& type) { return Value{next_id_++, type}; }

std::string Builder::Name(const Value& v) const {
  Check(v.id >= 0 && v.id < next_id_, "hlo: use of an undefined value");
  return "%v" + std::to_string(v.id);
}

void Builder::Emit(const std::string& line) {
  out_stack_.back() += "    ";
  out_stack_.back() += line;
  out_stack_.back() += '\n';
}

Value Builder::Arg(const TensorType& type, std::optional<int> alias_output) {
  Check(out_stack_.size() == 1 && next_id_ == static_cast<int>(args_.size()),
        "hlo: arguments must be declared before any op");
  Value v = Fresh(type);
  std::string a = Name(v) + ": " + type.str();
  if (alias_output) a += " {tf.aliasing_output = " + std::to_string(*alias_output) + " : i32}";
  args_.push_back(std::move(a));
  return v;
}

void Builder::Return(const std::vector<Value>& results) {
  Check(!finished_, "hlo: Return called twice");
  std::string names, types;
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) { names += ", "; types += ", "; }
    names += Name(results[i]);
    types += results[i].type.str();
    result_types_.push_back(results[i].type);
  }
  returns_ = "    \"func.return\"(" + names + ") : (" + types + ") -> ()\n";
  finished_ = true;
}

std::string Builder::Finish() const {
  Check(finished_, "hlo: Finish before Return");
  std::string s = "module @" + module_name_ + " {\n  func.func public @main(";
  for (size_t i = 0; i < args_.size(); ++i) {
    if (i) s += ", ";
    s += args_[i];
  }
  s += ") -> (" + TypeList(result_types_) + ") {\n";
  s += out_stack_.front();
  s += returns_;
  s += "  }\n";
  for (const auto& f : functions_) s += f.second + "\n";
  s += "}\n";
  return s;
}

std::vector<Value> Builder::While(const std::vector<Value>& state, const RegionFn& cond, const RegionFn& body) {
  std::vector<TensorType> types;
  for (const Value& v : state) types.push_back(v.type);
  // Two regions: BuildRegion gives "({...})" each; the op takes "({...}, {...})".
  std::string c = BuildRegion(types, cond);
  std::string r = BuildRegion(types, body);
  return Op("stablehlo.while", state, types, c.substr(0, c.size() - 1) + ", " + r.substr(1));
}

void Builder::AddFunction(const std::string& symbol, const std::string& text) {
  for (const auto& f : functions_) {
    if (f.first == symbol) return;
  }
  functions_.emplace_back(symbol, text);
}

std::vector<Value> Builder::Op(std::string_view full_name, const std::vector<Value>& operands,
                               const std::vector<TensorType>& results,
                               std::string_view attributes) {
  std::vector<Value> outs;
  std::string lhs;
  if (results.size() == 1) {
    outs.push_back(Fresh(results[0]));
    lhs = Name(outs[0]) + " = ";
  } else if (!results.empty()) {
    // Multi-result ops bind one name per result through a tuple name.
    int base = next_id_;
    for (const auto& t : results) outs.push_back(Fresh(t));
    lhs = "%r" + std::to_string(base) + ":" + std::to_string(results.size()) + " = ";
  }
  std::string ops, optypes;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (i) { ops += ", "; optypes += ", "; }
    ops += Name(operands[i]);
    optypes += operands[i].type.str();
  }
  std::string line = lhs + "\"" + std::string(full_name) + "\"(" + ops + ")";
  if (!attributes.empty()) line += " " + std::string(attributes);
  line += " : (" + optypes + ") -> ";
  line += results.size() == 1 ? results[0].str() : "(" + TypeList(results) + ")";
  Emit(line);
  if (results.size() > 1) {
    // Give each result its own %v name so later uses need no tuple syntax.
    std::string base = lhs.substr(0, lhs.find(':'));
    for (size_t i = 0; i < outs.size(); ++i) {
      // An identity reshape is free and keeps naming uniform.
      Emit(Name(outs[i]) + " = \"stablehlo.reshape\"(" + base + "#" + std::to_string(i) +
           ") : (" + outs[i].type.str() + ") -> " + outs[i].type.str());
    }
  }
  return outs;
}

std::vector<Value> Builder::OpWithRegion(std::string_view full_name, const std::vector<Value>& operands,
                                         const std::vector<TensorType>& results,
                                         const std::vector<TensorType>& region_args, const RegionFn& body,
                                         std::string_view attributes) {
  std::string attr = BuildRegion(region_args, body);
  if (!attributes.empty()) attr += " " + std::string(attributes);
  return Op(full_name, operands, results, attr);
}

std::string Builder::BuildRegion(const std::vector<TensorType>& arg_types, const RegionFn& fn) {
  out_stack_.emplace_back();
  std::vector<Value> args;
  std::string header = "^bb0(";
  for (size_t i = 0; i < arg_types.size(); ++i) {
    Value v = Fresh(arg_types[i]);
    args.push_back(v);
    if (i) header += ", ";
    header += Name(v) + ": " + arg_types[i].str();
  }
  header += "):\n";
  std::vector<Value> results = fn(*this, args);
  std::string names, types;
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) { names += ", "; types += ", "; }
    names += Name(results[i]);
    types += results[i].type.str();
  }
  Emit("\"stablehlo.return\"(" + names + ") : (" + types + ") -> ()");
  std::string body = std::move(out_stack_.back());
  out_stack_.pop_back();
  return "({\n  " + header + body + "    })";
}

// --- constants -----------------------------------------------------------

Value Builder::Constant(const Literal& value, DType dtype, const Shape& shape) {
  TensorType t{dtype, shape};
  std::string attr = "{value = dense<" + value.Spell(dtype) + "> : " + t.str() + "}";
  return Op("stablehlo.constant", {}, {t}, attr)[0];
}

Value Builder::ConstantI64(const std::vector<int64_t>& values, const Shape& shape) {
  TensorType t{DType::kI64, shape};
  Check(static_cast<int64_t>(values.size()) == t.numel(), "hlo: constant size mismatch");
  std::string attr = "{value = dense<";
  if (shape.empty()) {
    attr += std::to_string(values[0]);
  } else {
    // Flat list is accepted for a ranked tensor only in nested form; emit nested.
    std::function<void(size_t, size_t&)> emit = [&](size_t dim, size_t& pos) {
      attr += '[';
      for (int64_t i = 0; i < shape[dim]; ++i) {
        if (i) attr += ", ";
        if (dim + 1 == shape.size()) attr += std::to_string(values[pos++]);
        else emit(dim + 1, pos);
      }
      attr += ']';
    };
    size_t pos = 0;
    emit(0, pos);
  }
  attr += "> : " + t.str() + "}";
  return Op("stablehlo.constant", {}, {t}, attr)[0];
}

Value Builder::Iota(const TensorType& type, int64_t dim) {
  Check(dim >= 0 && dim < type.rank(), "hlo: iota dimension out of range");
  return Op("stablehlo.iota", {}, {type}, "{iota_dimension = " + std::to_string(dim) + " : i64}")[0];
}

// --- elementwise ------------------------------------------------------------

Value Builder::Unary(std::string_view op, Value x) {
  TensorType t = x.type;
  if (ReturnsBool(op)) t.dtype = DType::kBool;
  if (op == "abs" && IsComplex(t.dtype)) t.dtype = ComplexPart(t.dtype);  // |z| is real
  std::string name = op.find('.') == std::string_view::npos ? "stablehlo." + std::string(op)
                                                           : std::string(op);
  return Op(name, {x}, {t})[0];
}

Value Builder::Binary(std::string_view op, Value a, Value b) {
  Check(a.type == b.type, "hlo: " + std::string(op) + " operands differ: " + a.type.str() +
                              " vs " + b.type.str());
  std::string name = op.find('.') == std::string_view::npos ? "stablehlo." + std::string(op)
                                                           : std::string(op);
  return Op(name, {a, b}, {a.type})[0];
}

Value Builder::Cmp(Value a, Value b, Compare direction) {
  Check(a.type == b.type, "hlo: compare operands differ: " + a.type.str() + " vs " + b.type.str());
  std::string attr = std::string("{comparison_direction = #stablehlo<comparison_direction ") +
                     CompareName(direction) + ">";
  // Total order is not wanted: PyTorch compares NaN as IEEE does.
  // Complex compares (EQ/NE only, as PyTorch) are FLOAT on both parts.
  if (IsFloat(a.dtype()) || IsComplex(a.dtype())) attr += ", compare_type = #stablehlo<comparison_type FLOAT>";
  else if (IsUnsignedInt(a.dtype())) attr += ", compare_type = #stablehlo<comparison_type UNSIGNED>";
  else attr += ", compare_type = #stablehlo<comparison_type SIGNED>";
  attr += "}";
  return Op("stablehlo.compare", {a, b}, {TensorType{DType::kBool, a.shape()}}, attr)[0];
}

Value Builder::Select(Value pred, Value on_true, Value on_false) {
  Check(on_true.type == on_false.type, "hlo: select branches differ");
  Check(pred.dtype() == DType::kBool &&
            (pred.rank() == 0 || pred.shape() == on_true.shape()),
        "hlo: select predicate must be i1 of the branch shape");
  return Op("stablehlo.select", {pred, on_true, on_false}, {on_true.type})[0];
}

Value Builder::Clamp(Value lo, Value x, Value hi) {
  return Op("stablehlo.clamp", {lo, x, hi}, {x.type})[0];
}

Value Builder::Real(Value x) {
  if (!IsComplex(x.dtype())) return x;
  return Op("stablehlo.real", {x}, {TensorType{ComplexPart(x.dtype()), x.shape()}})[0];
}

Value Builder::Imag(Value x) {
  if (!IsComplex(x.dtype())) return Constant(Literal::Float(0.0), x.dtype(), x.shape());
  return Op("stablehlo.imag", {x}, {TensorType{ComplexPart(x.dtype()), x.shape()}})[0];
}

Value Builder::MakeComplex(Value re, Value im) {
  Check(re.type == im.type && (re.dtype() == DType::kF32 || re.dtype() == DType::kF64),
        "hlo: complex parts must be equal f32 or f64 types");
  return Op("stablehlo.complex", {re, im}, {TensorType{ComplexOf(re.dtype()), re.shape()}})[0];
}

namespace {

// Packed complex32 (types.h) <-> complex64. The parts' f16 bits sit in the
// low and high halves of a ui32; f16 -> f32 is exact, and f32 -> f16 rounds
// to nearest even, as c10::Half's constructor does.
Value UnpackComplex32(Builder& b, Value x) {
  Value bits = x;
  bits.type.dtype = DType::kU32;  // the same SSA value: kC32 is spelled ui32
  auto half = [&](Value v) {
    return b.Convert(b.BitcastConvert(b.Convert(v, DType::kU16), DType::kF16), DType::kF32);
  };
  Value low = b.Binary("and", bits, b.Constant(Literal::UInt(0xFFFF), DType::kU32, x.shape()));
  Value high = b.Binary("shift_right_logical", bits, b.Constant(Literal::UInt(16), DType::kU32, x.shape()));
  return b.MakeComplex(half(low), half(high));
}

Value PackComplex32(Builder& b, Value c64) {
  auto bits = [&](Value part) {
    return b.Convert(b.BitcastConvert(b.Convert(part, DType::kF16), DType::kU16), DType::kU32);
  };
  Value high = b.Binary("shift_left", bits(b.Imag(c64)), b.Constant(Literal::UInt(16), DType::kU32, c64.shape()));
  Value packed = b.Binary("or", bits(b.Real(c64)), high);
  packed.type.dtype = DType::kC32;
  return packed;
}

}  // namespace

Value Builder::Convert(Value x, DType to) {
  if (x.dtype() == to) return x;
  // complex32 converts through complex64 both ways, as the CPU's
  // complex<Half> casts go through float.
  if (x.dtype() == DType::kC32) return Convert(UnpackComplex32(*this, x), to);
  if (to == DType::kC32) return PackComplex32(*this, Convert(x, DType::kC64));
  // Complex casts as PyTorch's: complex -> real keeps the real part,
  // real -> complex has a zero imaginary part, c64 <-> c128 converts parts.
  if (IsComplex(x.dtype())) {
    if (IsComplex(to)) {
      return MakeComplex(Convert(Real(x), ComplexPart(to)), Convert(Imag(x), ComplexPart(to)));
    }
    return Convert(Real(x), to);
  }
  if (IsComplex(to)) {
    Value re = Convert(x, ComplexPart(to));
    return MakeComplex(re, Constant(Literal::Float(0.0), re.dtype(), re.shape()));
  }
  // Floats to uint32 go through i64, so negative values wrap as C casts do
  // on x86 (-1.0 -> 4294967295), where XLA would saturate to 0 (uint16 goes
  // through i32 with the narrow types below). uint64: the negative ones
  // through i64 (then the same bits), the rest directly, so values in
  // [2^63, 2^64) keep their magnitude. Beyond those ranges the CPU's uint32
  // and uint64 results depend on its vector code and are not matched.
  if (IsFloat(x.dtype()) && to == DType::kU32) return Convert(Convert(x, DType::kI64), to);
  if (IsFloat(x.dtype()) && to == DType::kU64) {
    Value wrapped = BitcastConvert(Convert(x, DType::kI64), DType::kU64);
    Value direct = Op("stablehlo.convert", {x}, {TensorType{to, x.shape()}})[0];
    Value negative = Cmp(x, Constant(Literal::Float(0.0), x.dtype(), x.shape()), Compare::kLT);
    return Select(negative, wrapped, direct);
  }
  // FP8 converts as PyTorch's do: through f32 both ways (f64 rounds to f32
  // first, integers become f32), and e4m3fn, which has no infinity,
  // saturates to +-448 where XLA would give NaN; NaN stays NaN (clamp keeps it).
  // The fnuz formats turn overflow and infinity into their NaN, as XLA does.
  // PyTorch's CPU casts the fnuz NaN to 0 in every integer type (the other
  // formats' NaN follow the float rule below).
  const bool fnuz = x.dtype() == DType::kF8E4M3FNUZ || x.dtype() == DType::kF8E5M2FNUZ;
  if (fnuz && to != DType::kBool && !IsFloat(to) && !IsComplex(to) && to != DType::kC32) {
    Value f = Convert(x, DType::kF32);
    Value nan = Cmp(f, f, Compare::kNE);
    return Convert(Select(nan, Constant(Literal::Float(0.0), DType::kF32, f.shape()), f), to);
  }
  if (IsFloat8(x.dtype()) && to != DType::kF32) return Convert(Convert(x, DType::kF32), to);
  if (IsFloat8(to)) {
    if (x.dtype() != DType::kF32) x = Convert(x, DType::kF32);
    if (to == DType::kF8E4M3FN) {
      x = Clamp(Constant(Literal::Float(-448.0), DType::kF32, {}), x,
                Constant(Literal::Float(448.0), DType::kF32, {}));
    }
    return Op("stablehlo.convert", {x}, {TensorType{to, x.shape()}})[0];
  }
  // Floats to i32/i64: a value outside the integer's range (and NaN) gives
  // x86's "integer indefinite" INT_MIN, as cvttss2si and so PyTorch's CPU
  // kernels (and NumPy) do, where XLA would saturate. Floats to narrow
  // integers go through i32 and wrap, as C casts do on x86 (a 32-bit
  // cvttss2si, then truncation), so values beyond i32 give the low bits of
  // INT32_MIN (0), again the CPU's result.
  if (IsFloat(x.dtype()) && (to == DType::kI32 || to == DType::kI64)) {
    const double limit = to == DType::kI32 ? 2147483648.0 : 9223372036854775808.0;
    Value in_range = Binary("and", Cmp(x, Constant(Literal::Float(-limit), x.dtype(), x.shape()), Compare::kGE),
                            Cmp(x, Constant(Literal::Float(limit), x.dtype(), x.shape()), Compare::kLT));
    Value converted = Op("stablehlo.convert", {x}, {TensorType{to, x.shape()}})[0];
    Literal indefinite = Literal::Int(to == DType::kI32 ? std::numeric_limits<int32_t>::min()
                                                        : std::numeric_limits<int64_t>::min());
    return Select(in_range, converted, Constant(indefinite, to, x.shape()));
  }
  if (IsFloat(x.dtype()) && (to == DType::kU8 || to == DType::kI8 || to == DType::kI16 || to == DType::kU16)) {
    x = Convert(x, DType::kI32);
  }
  // Bools to floats go through u8: XLA's algebraic simplifier rewrites
  // multiply(A, convert(pred)) into select(pred, A, 0), which loses IEEE
  // semantics (nan * False and inf * False give 0 instead of nan, -1 * False
  // gives +0 instead of -0). A convert from u8 does not match that pattern.
  if (x.dtype() == DType::kBool && IsFloat(to)) x = Convert(x, DType::kU8);
  return Op("stablehlo.convert", {x}, {TensorType{to, x.shape()}})[0];
}

Value Builder::BitcastConvert(Value x, DType to) {
  if (x.dtype() == to) return x;
  Check(DTypeSize(x.dtype()) == DTypeSize(to), "hlo: bitcast between different sizes");
  return Op("stablehlo.bitcast_convert", {x}, {TensorType{to, x.shape()}})[0];
}

// --- shape ---------------------------------------------------------------

Value Builder::BroadcastInDim(Value x, const Shape& shape, const std::vector<int64_t>& dims) {
  Check(static_cast<int64_t>(dims.size()) == x.rank(), "hlo: broadcast dims rank mismatch");
  for (size_t i = 0; i < dims.size(); ++i) {
    Check(dims[i] >= 0 && dims[i] < static_cast<int64_t>(shape.size()) &&
              (x.shape()[i] == 1 || x.shape()[i] == shape[dims[i]]),
          "hlo: cannot broadcast " + x.type.str() + " to " + ShapeStr(shape));
  }
  if (x.shape() == shape) return x;
  return Op("stablehlo.broadcast_in_dim", {x}, {TensorType{x.dtype(), shape}},
            "{broadcast_dimensions = " + I64Array(dims) + "}")[0];
}

Value Builder::BroadcastTo(Value x, const Shape& shape) {
  if (x.shape() == shape) return x;
  int64_t offset = static_cast<int64_t>(shape.size()) - x.rank();
  Check(offset >= 0, "hlo: cannot broadcast " + x.type.str() + " to " + ShapeStr(shape));
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < x.rank(); ++i) dims.push_back(offset + i);
  return BroadcastInDim(x, shape, dims);
}

Value Builder::Reshape(Value x, const Shape& shape) {
  if (x.shape() == shape) return x;
  Check(NumElements(shape) == x.type.numel(),
        "hlo: cannot reshape " + x.type.str() + " to " + ShapeStr(shape));
  return Op("stablehlo.reshape", {x}, {TensorType{x.dtype(), shape}})[0];
}

Value Builder::Transpose(Value x, const std::vector<int64_t>& perm) {
  Check(static_cast<int64_t>(perm.size()) == x.rank(), "hlo: transpose rank mismatch");
  bool identity = true;
  Shape out;
  for (size_t i = 0; i < perm.size(); ++i) {
    Check(perm[i] >= 0 && perm[i] < x.rank(), "hlo: bad permutation");
    identity &= perm[i] == static_cast<int64_t>(i);
    out.push_back(x.shape()[perm[i]]);
  }
  if (identity) return x;
  return Op("stablehlo.transpose", {x}, {TensorType{x.dtype(), out}},
            "{permutation = " + I64Array(perm) + "}")[0];
}

Value Builder::Slice(Value x, const std::vector<int64_t>& start, const std::vector<int64_t>& limit,
                     const std::vector<int64_t>& strides) {
  Check(static_cast<int64_t>(start.size()) == x.rank() && limit.size() == start.size() &&
            strides.size() == start.size(),
        "hlo: slice rank mismatch");
  Shape out;
  bool identity = true;
  for (size_t i = 0; i < start.size(); ++i) {
    Check(0 <= start[i] && start[i] <= limit[i] && limit[i] <= x.shape()[i] && strides[i] > 0,
          "hlo: slice out of bounds on " + x.type.str());
    int64_t n = limit[i] > start[i] ? (limit[i] - start[i] + strides[i] - 1) / strides[i] : 0;
    out.push_back(n);
    identity &= start[i] == 0 && limit[i] == x.shape()[i] && strides[i] == 1;
  }
  if (identity) return x;
  return Op("stablehlo.slice", {x}, {TensorType{x.dtype(), out}},
            "{start_indices = " + I64Array(start) + ", limit_indices = " + I64Array(limit) +
                ", strides = " + I64Array(strides) + "}")[0];
}

Value Builder::SliceDim(Value x, int64_t dim, int64_t start, int64_t limit, int64_t stride) {
  std::vector<int64_t> s(x.rank(), 0), l = x.shape(), st(x.rank(), 1);
  s[dim] = start;
  l[dim] = limit;
  st[dim] = stride;
  return Slice(x, s, l, st);
}

Value Builder::DynamicSlice(Value x, const std::vector<Value>& starts,
                            const std::vector<int64_t>& sizes) {
  Check(static_cast<int64_t>(starts.size()) == x.rank() && sizes.size() == starts.size(),
        "hlo: dynamic_slice rank mismatch");
  std::vector<Value> operands{x};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Op("stablehlo.dynamic_slice", operands, {TensorType{x.dtype(), sizes}},
            "{slice_sizes = " + I64Array(sizes) + "}")[0];
}

Value Builder::DynamicUpdateSlice(Value x, Value update, const std::vector<Value>& starts) {
  Check(static_cast<int64_t>(starts.size()) == x.rank() && update.rank() == x.rank() &&
            update.dtype() == x.dtype(),
        "hlo: dynamic_update_slice mismatch");
  std::vector<Value> operands{x, update};
  operands.insert(operands.end(), starts.begin(), starts.end());
  return Op("stablehlo.dynamic_update_slice", operands, {x.type})[0];
}

Value Builder::Concatenate(const std::vector<Value>& xs, int64_t dim) {
  Check(!xs.empty(), "hlo: concatenate of nothing");
  if (xs.size() == 1) return xs[0];
  Shape out = xs[0].shape();
  Check(dim >= 0 && dim < xs[0].rank(), "hlo: concatenate dimension out of range");
  out[dim] = 0;
  for (const Value& x : xs) {
    Check(x.dtype() == xs[0].dtype() && x.rank() == xs[0].rank(), "hlo: concatenate mismatch");
    out[dim] += x.shape()[dim];
  }
  return Op("stablehlo.concatenate", xs, {TensorType{xs[0].dtype(), out}},
            "{dimension = " + std::to_string(dim) + " : i64}")[0];
}

Value Builder::Pad(Value x, Value pad_value, const std::vector<int64_t>& low,
                   const std::vector<int64_t>& high, const std::vector<int64_t>& interior) {
  Check(pad_value.rank() == 0 && pad_value.dtype() == x.dtype(), "hlo: pad value must be a scalar");
  Shape out;
  for (int64_t i = 0; i < x.rank(); ++i) {
    int64_t n = x.shape()[i];
    int64_t size = low[i] + high[i] + n + std::max<int64_t>(n - 1, 0) * interior[i];
    Check(size >= 0, "hlo: negative padded size");
    out.push_back(size);
  }
  return Op("stablehlo.pad", {x, pad_value}, {TensorType{x.dtype(), out}},
            "{edge_padding_low = " + I64Array(low) + ", edge_padding_high = " + I64Array(high) +
                ", interior_padding = " + I64Array(interior) + "}")[0];
}

Value Builder::Reverse(Value x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  return Op("stablehlo.reverse", {x}, {x.type}, "{dimensions = " + I64Array(dims) + "}")[0];
}

// --- contraction -----------------------------------------------------------

Value Builder::DotGeneral(Value lhs, Value rhs, const std::vector<int64_t>& lhs_batch,
                          const std::vector<int64_t>& rhs_batch,
                          const std::vector<int64_t>& lhs_contract,
                          const std::vector<int64_t>& rhs_contract, std::optional<DType> result) {
  Check(lhs_batch.size() == rhs_batch.size() && lhs_contract.size() == rhs_contract.size(),
        "hlo: dot_general dimension lists differ in length");
  Shape out;
  for (size_t i = 0; i < lhs_batch.size(); ++i) {
    Check(lhs.shape()[lhs_batch[i]] == rhs.shape()[rhs_batch[i]], "hlo: dot batch mismatch");
    out.push_back(lhs.shape()[lhs_batch[i]]);
  }
  for (size_t i = 0; i < lhs_contract.size(); ++i) {
    Check(lhs.shape()[lhs_contract[i]] == rhs.shape()[rhs_contract[i]],
          "hlo: dot contracting mismatch: " + lhs.type.str() + " and " + rhs.type.str());
  }
  auto free_dims = [&](const Value& v, const std::vector<int64_t>& b, const std::vector<int64_t>& c) {
    for (int64_t d = 0; d < v.rank(); ++d) {
      if (std::find(b.begin(), b.end(), d) == b.end() && std::find(c.begin(), c.end(), d) == c.end())
        out.push_back(v.shape()[d]);
    }
  };
  free_dims(lhs, lhs_batch, lhs_contract);
  free_dims(rhs, rhs_batch, rhs_contract);
  std::string attr = "{dot_dimension_numbers = #stablehlo.dot<lhs_batching_dimensions = " +
                     I64List(lhs_batch) + ", rhs_batching_dimensions = " + I64List(rhs_batch) +
                     ", lhs_contracting_dimensions = " + I64List(lhs_contract) +
                     ", rhs_contracting_dimensions = " + I64List(rhs_contract) + ">}";
  return Op("stablehlo.dot_general", {lhs, rhs}, {TensorType{result.value_or(lhs.dtype()), out}},
            attr)[0];
}

// --- regions ----------------------------------------------------------------

std::vector<Value> Builder::Reduce(const std::vector<Value>& inputs, const std::vector<Value>& inits,
                                   const std::vector<int64_t>& dims, const RegionFn& body) {
  Check(!inputs.empty() && inputs.size() == inits.size(), "hlo: reduce needs one init per input");
  std::vector<TensorType> region_args, results;
  Shape out;
  for (int64_t d = 0; d < inputs[0].rank(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) out.push_back(inputs[0].shape()[d]);
  }
  for (const Value& in : inits) region_args.push_back(TensorType{in.dtype(), {}});
  for (const Value& in : inits) region_args.push_back(TensorType{in.dtype(), {}});
  for (const Value& in : inputs) results.push_back(TensorType{in.dtype(), out});
  std::string region = BuildRegion(region_args, body);
  std::vector<Value> operands = inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  return Op("stablehlo.reduce", operands, results,
            region + " {dimensions = " + I64Array(dims) + "}");
}

Value Builder::Gather(Value operand, Value indices, const GatherDims& d) {
  // Result shape: batch dims of indices (all but index_vector_dim) with the
  // non-collapsed slice sizes placed at offset_dims.
  Shape batch;
  for (int64_t i = 0; i < indices.rank(); ++i) {
    if (i != d.index_vector_dim) batch.push_back(indices.shape()[i]);
  }
  Shape window;
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (std::find(d.collapsed_slice_dims.begin(), d.collapsed_slice_dims.end(), i) ==
        d.collapsed_slice_dims.end())
      window.push_back(d.slice_sizes[i]);
  }
  Shape out(batch.size() + window.size());
  size_t bi = 0, wi = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    bool is_offset = std::find(d.offset_dims.begin(), d.offset_dims.end(),
                               static_cast<int64_t>(i)) != d.offset_dims.end();
    out[i] = is_offset ? window[wi++] : batch[bi++];
  }
  std::string attr = "{dimension_numbers = #stablehlo.gather<offset_dims = " + I64List(d.offset_dims) +
                     ", collapsed_slice_dims = " + I64List(d.collapsed_slice_dims) +
                     ", start_index_map = " + I64List(d.start_index_map) +
                     ", index_vector_dim = " + std::to_string(d.index_vector_dim) +
                     ">, indices_are_sorted = false, slice_sizes = " + I64Array(d.slice_sizes) + "}";
  return Op("stablehlo.gather", {operand, indices}, {TensorType{operand.dtype(), out}}, attr)[0];
}

Value Builder::Scatter(Value operand, Value indices, Value updates, const ScatterDims& d,
                       const RegionFn& combine) {
  TensorType s{operand.dtype(), {}};
  std::string region = BuildRegion({s, s}, combine);
  std::string attr = " {indices_are_sorted = false, scatter_dimension_numbers = "
                     "#stablehlo.scatter<update_window_dims = " + I64List(d.update_window_dims) +
                     ", inserted_window_dims = " + I64List(d.inserted_window_dims) +
                     ", scatter_dims_to_operand_dims = " + I64List(d.scatter_dims_to_operand_dims) +
                     ", index_vector_dim = " + std::to_string(d.index_vector_dim) +
                     ">, unique_indices = false}";
  return Op("stablehlo.scatter", {operand, indices, updates}, {operand.type}, region + attr)[0];
}

std::vector<Value> Builder::Sort(const std::vector<Value>& inputs, int64_t dim, bool stable,
                                 const RegionFn& comparator) {
  std::vector<TensorType> region_args, results;
  for (const Value& in : inputs) {
    region_args.push_back(TensorType{in.dtype(), {}});
    region_args.push_back(TensorType{in.dtype(), {}});
    results.push_back(in.type);
  }
  std::string region = BuildRegion(region_args, comparator);
  return Op("stablehlo.sort", inputs, results,
            region + " {dimension = " + std::to_string(dim) + " : i64, is_stable = " +
                (stable ? "true" : "false") + "}");
}

std::vector<Value> Builder::ReduceWindow(const std::vector<Value>& inputs,
                                         const std::vector<Value>& inits,
                                         const std::vector<int64_t>& window,
                                         const std::vector<int64_t>& strides,
                                         const std::vector<int64_t>& base_dilations,
                                         const std::vector<int64_t>& window_dilations,
                                         const std::vector<std::pair<int64_t, int64_t>>& padding,
                                         const RegionFn& body) {
  const Shape& in = inputs[0].shape();
  Shape out;
  std::vector<int64_t> pad_flat;
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t dilated = in[i] == 0 ? 0 : (in[i] - 1) * base_dilations[i] + 1;
    int64_t padded = dilated + padding[i].first + padding[i].second;
    int64_t wsize = (window[i] - 1) * window_dilations[i] + 1;
    out.push_back(padded < wsize ? 0 : (padded - wsize) / strides[i] + 1);
    pad_flat.push_back(padding[i].first);
    pad_flat.push_back(padding[i].second);
  }
  std::vector<TensorType> region_args, results;
  for (const Value& v : inits) region_args.push_back(TensorType{v.dtype(), {}});
  for (const Value& v : inits) region_args.push_back(TensorType{v.dtype(), {}});
  for (const Value& v : inputs) results.push_back(TensorType{v.dtype(), out});
  std::string region = BuildRegion(region_args, body);
  std::string pad_attr = "dense<[";
  for (size_t i = 0; i < in.size(); ++i) {
    if (i) pad_attr += ", ";
    pad_attr += "[" + std::to_string(padding[i].first) + ", " + std::to_string(padding[i].second) + "]";
  }
  pad_attr += "]> : tensor<" + std::to_string(in.size()) + "x2xi64>";
  std::vector<Value> operands = inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  return Op("stablehlo.reduce_window", operands, results,
            region + " {base_dilations = " + I64Array(base_dilations) + ", padding = " + pad_attr +
                ", window_dilations = " + I64Array(window_dilations) +
                ", window_dimensions = " + I64Array(window) +
                ", window_strides = " + I64Array(strides) + "}");
}

}  // namespace torchtpu::hlo

// --- convolution and constant arrays (added for conv/pool lowerings) ---------

namespace torchtpu::hlo {

namespace {

std::vector<int64_t> OnesIfEmpty(const std::vector<int64_t>& v, size_t n) {
  return v.empty() ? std::vector<int64_t>(n, 1) : v;
}

// "[b, f, 0, 1]"-style dimension list: two named dimensions, then spatial.
std::string ConvLayout(const char* first, const char* second, size_t spatial) {
  std::string s = std::string("[") + first + ", " + second;
  for (size_t i = 0; i < spatial; ++i) s += ", " + std::to_string(i);
  return s + "]";
}

}  // namespace

Value Convolution(Builder& b, Value lhs, Value rhs, const ConvOptions& o, std::optional<DType> result) {
  Check(lhs.rank() >= 3 && rhs.rank() == lhs.rank(), "hlo: convolution needs rank >= 3 operands of equal rank");
  Check(lhs.dtype() == rhs.dtype(), "hlo: convolution operand dtypes differ");
  const size_t n = static_cast<size_t>(lhs.rank()) - 2;
  std::vector<int64_t> strides = OnesIfEmpty(o.window_strides, n);
  std::vector<int64_t> lhs_dil = OnesIfEmpty(o.lhs_dilation, n);
  std::vector<int64_t> rhs_dil = OnesIfEmpty(o.rhs_dilation, n);
  std::vector<std::pair<int64_t, int64_t>> padding = o.padding;
  if (padding.empty()) padding.assign(n, {0, 0});
  Check(strides.size() == n && lhs_dil.size() == n && rhs_dil.size() == n && padding.size() == n,
        "hlo: convolution window parameters need one entry per spatial dimension");
  const Shape& in = lhs.shape();
  const Shape& k = rhs.shape();
  const int64_t fgc = o.feature_group_count, bgc = o.batch_group_count;
  Check(fgc >= 1 && bgc >= 1 && (fgc == 1 || bgc == 1), "hlo: bad convolution group counts");
  Check(in[1] == k[1] * fgc && k[0] % fgc == 0 && k[0] % bgc == 0 && in[0] % bgc == 0,
        "hlo: convolution feature/batch sizes do not match the group counts");
  Shape out{in[0] / bgc, k[0]};
  std::string pad = "dense<[";
  for (size_t i = 0; i < n; ++i) {
    Check(strides[i] >= 1 && lhs_dil[i] >= 1 && rhs_dil[i] >= 1, "hlo: convolution strides and dilations must be positive");
    int64_t dilated = in[i + 2] == 0 ? 0 : (in[i + 2] - 1) * lhs_dil[i] + 1;
    int64_t padded = dilated + padding[i].first + padding[i].second;
    int64_t window = k[i + 2] == 0 ? 0 : (k[i + 2] - 1) * rhs_dil[i] + 1;
    out.push_back(padded < window ? 0 : (padded - window) / strides[i] + 1);
    if (i) pad += ", ";
    pad += "[" + std::to_string(padding[i].first) + ", " + std::to_string(padding[i].second) + "]";
  }
  pad += "]> : tensor<" + std::to_string(n) + "x2xi64>";
  std::string attr = "{batch_group_count = " + std::to_string(bgc) +
                     " : i64, dimension_numbers = #stablehlo.conv<" + ConvLayout("b", "f", n) + "x" +
                     ConvLayout("o", "i", n) + "->" + ConvLayout("b", "f", n) +
                     ">, feature_group_count = " + std::to_string(fgc) +
                     " : i64, lhs_dilation = " + I64Array(lhs_dil) + ", padding = " + pad +
                     ", rhs_dilation = " + I64Array(rhs_dil) + ", window_strides = " + I64Array(strides) + "}";
  return b.Op("stablehlo.convolution", {lhs, rhs}, {TensorType{result.value_or(lhs.dtype()), out}}, attr)[0];
}

Value ConstantArray(Builder& b, const std::vector<double>& values, DType dtype, const Shape& shape) {
  TensorType t{dtype, shape};
  Check(static_cast<int64_t>(values.size()) == t.numel(), "hlo: constant size mismatch");
  std::string attr = "{value = dense<";
  size_t pos = 0;
  std::function<void(size_t)> emit = [&](size_t dim) {
    if (dim == shape.size()) {
      attr += Literal::Float(values[pos++]).Spell(dtype);
      return;
    }
    attr += '[';
    for (int64_t i = 0; i < shape[dim]; ++i) {
      if (i) attr += ", ";
      emit(dim + 1);
    }
    attr += ']';
  };
  emit(0);
  attr += "> : " + t.str() + "}";
  return b.Op("stablehlo.constant", {}, {t}, attr)[0];
}

}  // namespace torchtpu::hlo
