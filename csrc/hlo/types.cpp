#include "hlo/types.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace torchtpu::hlo {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kBool: return "i1";
    case DType::kU8: return "ui8";
    case DType::kI8: return "i8";
    case DType::kI16: return "i16";
    case DType::kI32: return "i32";
    case DType::kI64: return "i64";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF32: return "f32";
    case DType::kF64: return "f64";
    case DType::kU32: return "ui32";
    case DType::kU64: return "ui64";
    case DType::kF8E4M3FN: return "f8E4M3FN";
    case DType::kF8E5M2: return "f8E5M2";
    case DType::kU16: return "ui16";
    case DType::kC64: return "complex<f32>";
    case DType::kC128: return "complex<f64>";
    case DType::kC32: return "ui32";  // packed (types.h)
    case DType::kF8E4M3FNUZ: return "f8E4M3FNUZ";
    case DType::kF8E5M2FNUZ: return "f8E5M2FNUZ";
  }
  return "?";
}

size_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kBool: case DType::kU8: case DType::kI8: return 1;
    case DType::kF8E4M3FN: case DType::kF8E5M2: case DType::kF8E4M3FNUZ: case DType::kF8E5M2FNUZ: return 1;
    case DType::kI16: case DType::kF16: case DType::kBF16: case DType::kU16: return 2;
    case DType::kI32: case DType::kF32: case DType::kU32: case DType::kC32: return 4;
    case DType::kI64: case DType::kF64: case DType::kU64: case DType::kC64: return 8;
    case DType::kC128: return 16;
  }
  return 0;
}

bool IsFloat(DType d) {
  return d == DType::kF16 || d == DType::kBF16 || d == DType::kF32 || d == DType::kF64 || IsFloat8(d);
}
bool IsFloat8(DType d) {
  return d == DType::kF8E4M3FN || d == DType::kF8E5M2 || d == DType::kF8E4M3FNUZ || d == DType::kF8E5M2FNUZ;
}
bool IsSignedInt(DType d) {
  return d == DType::kI8 || d == DType::kI16 || d == DType::kI32 || d == DType::kI64;
}
bool IsUnsignedInt(DType d) {
  return d == DType::kBool || d == DType::kU8 || d == DType::kU16 || d == DType::kU32 || d == DType::kU64;
}
bool IsComplex(DType d) { return d == DType::kC64 || d == DType::kC128; }
DType ComplexPart(DType d) {
  return d == DType::kC64 ? DType::kF32 : d == DType::kC128 ? DType::kF64 : d;
}
DType ComplexOf(DType part) { return part == DType::kF64 ? DType::kC128 : DType::kC64; }

int64_t NumElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorType::str() const {
  std::string s = "tensor<";
  for (int64_t d : shape) {
    s += std::to_string(d);
    s += 'x';
  }
  s += DTypeName(dtype);
  s += '>';
  return s;
}

std::optional<TensorType> ParseTensorType(const std::string& text) {
  const std::string open = "tensor<";
  if (text.size() <= open.size() + 1 || text.compare(0, open.size(), open) != 0 || text.back() != '>') {
    return std::nullopt;
  }
  std::string body = text.substr(open.size(), text.size() - open.size() - 1);
  TensorType t;
  t.shape.clear();
  size_t pos = 0;
  // Sizes are the leading "<digits>x" groups; the rest is the element type.
  while (pos < body.size() && std::isdigit(static_cast<unsigned char>(body[pos]))) {
    size_t x = body.find('x', pos);
    if (x == std::string::npos) break;
    bool digits = true;
    for (size_t i = pos; i < x; ++i) digits = digits && std::isdigit(static_cast<unsigned char>(body[i]));
    if (!digits) break;
    t.shape.push_back(std::stoll(body.substr(pos, x - pos)));
    pos = x + 1;
  }
  const std::string element = body.substr(pos);
  for (int d = 0; d <= static_cast<int>(kLastDType); ++d) {
    if (element == DTypeName(static_cast<DType>(d))) {
      t.dtype = static_cast<DType>(d);
      return t;
    }
  }
  return std::nullopt;
}

namespace {

// Bit patterns for values MLIR cannot spell in decimal.
std::string NonFinite(DType dtype, double v) {
  bool neg = std::signbit(v);
  const char* s = nullptr;
  if (std::isnan(v)) {
    switch (dtype) {
      case DType::kF16: s = "0x7E00"; break;
      case DType::kBF16: s = "0x7FC0"; break;
      case DType::kF32: s = "0x7FC00000"; break;
      case DType::kF8E4M3FN: s = "0x7F"; break;
      case DType::kF8E5M2: s = "0x7E"; break;
      case DType::kF8E4M3FNUZ: case DType::kF8E5M2FNUZ: s = "0x80"; break;
      default: s = "0x7FF8000000000000"; break;
    }
  } else {
    switch (dtype) {
      case DType::kF16: s = neg ? "0xFC00" : "0x7C00"; break;
      case DType::kBF16: s = neg ? "0xFF80" : "0x7F80"; break;
      case DType::kF32: s = neg ? "0xFF800000" : "0x7F800000"; break;
      // e4m3fn has no infinity: PyTorch saturates to +-448 (0x7E).
      case DType::kF8E4M3FN: s = neg ? "0xFE" : "0x7E"; break;
      case DType::kF8E5M2: s = neg ? "0xFC" : "0x7C"; break;
      // The fnuz formats have no infinity: PyTorch's conversion gives NaN.
      case DType::kF8E4M3FNUZ: case DType::kF8E5M2FNUZ: s = "0x80"; break;
      default: s = neg ? "0xFFF0000000000000" : "0x7FF0000000000000"; break;
    }
  }
  return s;
}

// Wraps an integer into the range of `dtype`, as a C cast would.
int64_t WrapInt(int64_t v, DType dtype) {
  switch (dtype) {
    case DType::kU8: return static_cast<uint8_t>(v);
    case DType::kI8: return static_cast<int8_t>(v);
    case DType::kI16: return static_cast<int16_t>(v);
    case DType::kI32: return static_cast<int32_t>(v);
    case DType::kU16: return static_cast<uint16_t>(v);
    case DType::kU32: return static_cast<uint32_t>(v);
    default: return v;
  }
}

}  // namespace

std::string Literal::Spell(DType dtype) const {
  if (dtype == DType::kBool) {
    bool v = kind == Kind::kBool ? b : kind == Kind::kInt ? i != 0 : kind == Kind::kUInt ? u != 0 : f != 0.0;
    return v ? "true" : "false";
  }
  if (IsFloat(dtype)) {
    double v = kind == Kind::kBool ? (b ? 1.0 : 0.0)
             : kind == Kind::kInt ? static_cast<double>(i)
             : kind == Kind::kUInt ? static_cast<double>(u) : f;
    if (!std::isfinite(v)) return NonFinite(dtype, v);
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.17e", v);
    return buf;
  }
  if (IsComplex(dtype)) {
    // A real value as a complex constant: MLIR spells it (re, im).
    return "(" + Spell(ComplexPart(dtype)) + ", 0.0)";
  }
  if (dtype == DType::kC32) {
    // Packed complex32: only zero (all bits clear) is spelled here; other
    // values are built in complex64 and converted (Builder::Convert).
    const bool zero = kind == Kind::kBool ? !b : kind == Kind::kInt ? i == 0 : kind == Kind::kUInt ? u == 0 : f == 0.0;
    if (!zero) throw std::invalid_argument("hlo: a complex32 constant other than 0 is built in complex64 and converted");
    return "0";
  }
  if (dtype == DType::kU64) {
    // Unsigned 64-bit values past INT64_MAX must not be spelled negative
    // (MLIR rejects a negative literal for ui64): wrap as C does, print unsigned.
    uint64_t v = kind == Kind::kBool ? (b ? 1u : 0u)
               : kind == Kind::kInt ? static_cast<uint64_t>(i)
               : kind == Kind::kUInt ? u
               : f < 0 ? static_cast<uint64_t>(static_cast<int64_t>(f)) : static_cast<uint64_t>(f);
    return std::to_string(v);
  }
  int64_t v = kind == Kind::kBool ? (b ? 1 : 0)
            : kind == Kind::kInt ? i
            : kind == Kind::kUInt ? static_cast<int64_t>(u)
            : static_cast<int64_t>(f);  // callers clamp/round floats first
  return std::to_string(WrapInt(v, dtype));
}

}  // namespace torchtpu::hlo
