#include "aten/runtime/dtype.h"

#include <c10/util/Exception.h>

namespace torchtpu::aten {

bool IsSupported(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: case c10::kByte: case c10::kChar: case c10::kShort: case c10::kInt:
    case c10::kLong: case c10::kHalf: case c10::kBFloat16: case c10::kFloat: case c10::kDouble:
    case c10::kFloat8_e4m3fn: case c10::kFloat8_e5m2: case c10::kFloat8_e4m3fnuz: case c10::kFloat8_e5m2fnuz:
    case c10::kUInt16: case c10::kUInt32: case c10::kUInt64:
    case c10::kComplexFloat: case c10::kComplexDouble: case c10::kComplexHalf:
      return true;
    default:
      return false;
  }
}

hlo::DType ToHlo(c10::ScalarType t) {
  switch (t) {
    case c10::kBool: return hlo::DType::kBool;
    case c10::kByte: return hlo::DType::kU8;
    case c10::kChar: return hlo::DType::kI8;
    case c10::kShort: return hlo::DType::kI16;
    case c10::kInt: return hlo::DType::kI32;
    case c10::kLong: return hlo::DType::kI64;
    case c10::kHalf: return hlo::DType::kF16;
    case c10::kBFloat16: return hlo::DType::kBF16;
    case c10::kFloat: return hlo::DType::kF32;
    case c10::kDouble: return hlo::DType::kF64;
    case c10::kFloat8_e4m3fn: return hlo::DType::kF8E4M3FN;
    case c10::kFloat8_e5m2: return hlo::DType::kF8E5M2;
    case c10::kFloat8_e4m3fnuz: return hlo::DType::kF8E4M3FNUZ;
    case c10::kFloat8_e5m2fnuz: return hlo::DType::kF8E5M2FNUZ;
    case c10::kUInt16: return hlo::DType::kU16;
    case c10::kUInt32: return hlo::DType::kU32;
    case c10::kUInt64: return hlo::DType::kU64;
    case c10::kComplexFloat: return hlo::DType::kC64;
    case c10::kComplexDouble: return hlo::DType::kC128;
    case c10::kComplexHalf: return hlo::DType::kC32;
    default:
      TORCH_CHECK_TYPE(false, "torchtpu: dtype ", t, " is not supported on the tpu device");
  }
}

c10::ScalarType ToTorch(hlo::DType t) {
  switch (t) {
    case hlo::DType::kBool: return c10::kBool;
    case hlo::DType::kU8: return c10::kByte;
    case hlo::DType::kI8: return c10::kChar;
    case hlo::DType::kI16: return c10::kShort;
    case hlo::DType::kI32: return c10::kInt;
    case hlo::DType::kI64: return c10::kLong;
    case hlo::DType::kF16: return c10::kHalf;
    case hlo::DType::kBF16: return c10::kBFloat16;
    case hlo::DType::kF32: return c10::kFloat;
    case hlo::DType::kF64: return c10::kDouble;
    case hlo::DType::kF8E4M3FN: return c10::kFloat8_e4m3fn;
    case hlo::DType::kF8E5M2: return c10::kFloat8_e5m2;
    case hlo::DType::kF8E4M3FNUZ: return c10::kFloat8_e4m3fnuz;
    case hlo::DType::kF8E5M2FNUZ: return c10::kFloat8_e5m2fnuz;
    case hlo::DType::kU16: return c10::kUInt16;
    case hlo::DType::kU32: return c10::kUInt32;
    case hlo::DType::kU64: return c10::kUInt64;
    case hlo::DType::kC64: return c10::kComplexFloat;
    case hlo::DType::kC128: return c10::kComplexDouble;
    case hlo::DType::kC32: return c10::kComplexHalf;
  }
  return c10::kFloat;
}

pjrt::ElementType ToPjrt(hlo::DType t) {
  switch (t) {
    case hlo::DType::kBool: return pjrt::ElementType::kPred;
    case hlo::DType::kU8: return pjrt::ElementType::kU8;
    case hlo::DType::kI8: return pjrt::ElementType::kS8;
    case hlo::DType::kI16: return pjrt::ElementType::kS16;
    case hlo::DType::kI32: return pjrt::ElementType::kS32;
    case hlo::DType::kI64: return pjrt::ElementType::kS64;
    case hlo::DType::kF16: return pjrt::ElementType::kF16;
    case hlo::DType::kBF16: return pjrt::ElementType::kBF16;
    case hlo::DType::kF32: return pjrt::ElementType::kF32;
    case hlo::DType::kF64: return pjrt::ElementType::kF64;
    case hlo::DType::kF8E4M3FN: return pjrt::ElementType::kF8E4M3FN;
    case hlo::DType::kF8E5M2: return pjrt::ElementType::kF8E5M2;
    case hlo::DType::kF8E4M3FNUZ: return pjrt::ElementType::kF8E4M3FNUZ;
    case hlo::DType::kF8E5M2FNUZ: return pjrt::ElementType::kF8E5M2FNUZ;
    case hlo::DType::kU16: return pjrt::ElementType::kU16;
    case hlo::DType::kU32: return pjrt::ElementType::kU32;
    case hlo::DType::kU64: return pjrt::ElementType::kU64;
    case hlo::DType::kC64: return pjrt::ElementType::kC64;
    case hlo::DType::kC128: return pjrt::ElementType::kC128;
    // No PJRT complex32: packed in a u32 (hlo/types.h), the same bytes.
    case hlo::DType::kC32: return pjrt::ElementType::kU32;
  }
  return pjrt::ElementType::kF32;
}

}  // namespace torchtpu::aten
