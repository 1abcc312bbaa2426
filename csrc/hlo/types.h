// Element types and tensor types of the StableHLO we emit. No torch, no PJRT.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace torchtpu::hlo {

// kU16/kU32/kU64 are PyTorch's uint16/uint32/uint64 (and kU32/kU64 also the
// random bits and state of stablehlo.rng_bit_generator).
// kC64/kC128 are complex64/complex128 (complex<f32>, complex<f64>): stored as
// PJRT C64/C128 buffers, interleaved (re, im) pairs as in PyTorch's memory.
// kF8E4M3FN/kF8E5M2 are PyTorch's float8_e4m3fn/float8_e5m2 (OCP FP8), and
// kF8E4M3FNUZ/kF8E5M2FNUZ its float8_e4m3fnuz/float8_e5m2fnuz (no infinity,
// no negative zero, one NaN: 0x80): storage and conversions; arithmetic on
// them runs in f32 (as PyTorch's CPU does).
// kC32 is PyTorch's complex32 (complex<f16>). StableHLO and PJRT have no such
// element type, so it is packed: one ui32 per element, the real part's f16
// bits low and the imaginary part's high, the same bytes as PyTorch's
// interleaved (re, im) on a little-endian host. It is spelled ui32 in
// programs; Builder::Convert packs and unpacks it, and nothing else computes
// on it (IsComplex is false for it: it is not a complex value in a program).
enum class DType : uint8_t { kBool, kU8, kI8, kI16, kI32, kI64, kF16, kBF16, kF32, kF64, kU32, kU64,
                             kF8E4M3FN, kF8E5M2, kU16, kC64, kC128, kC32, kF8E4M3FNUZ, kF8E5M2FNUZ };
// The last enumerator, for code that walks or range-checks them.
constexpr DType kLastDType = DType::kF8E5M2FNUZ;

// MLIR spelling: i1, ui8, i8, ..., bf16, f32.
const char* DTypeName(DType dtype);
size_t DTypeSize(DType dtype);
bool IsFloat(DType dtype);
bool IsFloat8(DType dtype);
bool IsSignedInt(DType dtype);
bool IsUnsignedInt(DType dtype);  // bool counts as unsigned for comparisons
bool IsComplex(DType dtype);
// The element type of a complex type's parts (f32 for c64, f64 for c128);
// `dtype` itself for anything else.
DType ComplexPart(DType dtype);
// The complex type whose parts are `part` (c64 for f32 and narrower floats, c128 for f64).
DType ComplexOf(DType part);
inline bool IsInteger(DType d) { return IsSignedInt(d) || IsUnsignedInt(d); }

using Shape = std::vector<int64_t>;

int64_t NumElements(const Shape& shape);

struct TensorType {
  DType dtype = DType::kF32;
  Shape shape;

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numel() const { return NumElements(shape); }
  // "tensor<2x3xf32>", "tensor<f32>" for rank 0.
  std::string str() const;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

// Parses TensorType::str()'s spelling ("tensor<2x3xf32>", "tensor<i1>");
// nullopt for anything else (dynamic sizes, unknown element types).
std::optional<TensorType> ParseTensorType(const std::string& text);

// A scalar constant in one of our element types. Floats keep a double; the
// emitter writes non-finite values as their bit patterns.
struct Literal {
  enum class Kind : uint8_t { kBool, kInt, kUInt, kFloat } kind = Kind::kInt;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0.0;

  static Literal Bool(bool v) { Literal l; l.kind = Kind::kBool; l.b = v; return l; }
  static Literal Int(int64_t v) { Literal l; l.kind = Kind::kInt; l.i = v; return l; }
  static Literal UInt(uint64_t v) { Literal l; l.kind = Kind::kUInt; l.u = v; return l; }
  static Literal Float(double v) { Literal l; l.kind = Kind::kFloat; l.f = v; return l; }
  // The value converted to `dtype` and spelled as an MLIR dense element.
  std::string Spell(DType dtype) const;
};

}  // namespace torchtpu::hlo
