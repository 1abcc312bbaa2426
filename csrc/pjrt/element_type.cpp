// ElementType <-> PJRT_Buffer_Type, sizes and names.
#include "pjrt/pjrt_internal.h"

namespace torchtpu::pjrt {

size_t ElementSize(ElementType type) {
  switch (type) {
    case ElementType::kPred: case ElementType::kS8: case ElementType::kU8:
    case ElementType::kF8E4M3FN: case ElementType::kF8E5M2: return 1;
    case ElementType::kF8E4M3FNUZ: case ElementType::kF8E5M2FNUZ: return 1;
    case ElementType::kS16: case ElementType::kU16:
    case ElementType::kF16: case ElementType::kBF16: return 2;
    case ElementType::kS32: case ElementType::kU32: case ElementType::kF32: return 4;
    case ElementType::kS64: case ElementType::kU64: case ElementType::kF64: case ElementType::kC64: return 8;
    case ElementType::kC128: return 16;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "invalid ElementType " + std::to_string(static_cast<int>(type)));
}

const char* ElementName(ElementType type) {
  switch (type) {
    case ElementType::kPred: return "pred";
    case ElementType::kS8: return "s8";
    case ElementType::kS16: return "s16";
    case ElementType::kS32: return "s32";
    case ElementType::kS64: return "s64";
    case ElementType::kU8: return "u8";
    case ElementType::kU16: return "u16";
    case ElementType::kU32: return "u32";
    case ElementType::kU64: return "u64";
    case ElementType::kF16: return "f16";
    case ElementType::kBF16: return "bf16";
    case ElementType::kF32: return "f32";
    case ElementType::kF64: return "f64";
    case ElementType::kF8E4M3FN: return "f8e4m3fn";
    case ElementType::kF8E5M2: return "f8e5m2";
    case ElementType::kF8E4M3FNUZ: return "f8e4m3fnuz";
    case ElementType::kF8E5M2FNUZ: return "f8e5m2fnuz";
    case ElementType::kC64: return "c64";
    case ElementType::kC128: return "c128";
  }
  return "invalid";
}

namespace internal {

PJRT_Buffer_Type ToPjrt(ElementType type) {
  switch (type) {
    case ElementType::kPred: return PJRT_Buffer_Type_PRED;
    case ElementType::kS8: return PJRT_Buffer_Type_S8;
    case ElementType::kS16: return PJRT_Buffer_Type_S16;
    case ElementType::kS32: return PJRT_Buffer_Type_S32;
    case ElementType::kS64: return PJRT_Buffer_Type_S64;
    case ElementType::kU8: return PJRT_Buffer_Type_U8;
    case ElementType::kU16: return PJRT_Buffer_Type_U16;
    case ElementType::kU32: return PJRT_Buffer_Type_U32;
    case ElementType::kU64: return PJRT_Buffer_Type_U64;
    case ElementType::kF16: return PJRT_Buffer_Type_F16;
    case ElementType::kBF16: return PJRT_Buffer_Type_BF16;
    case ElementType::kF32: return PJRT_Buffer_Type_F32;
    case ElementType::kF64: return PJRT_Buffer_Type_F64;
    case ElementType::kF8E4M3FN: return PJRT_Buffer_Type_F8E4M3FN;
    case ElementType::kF8E5M2: return PJRT_Buffer_Type_F8E5M2;
    case ElementType::kF8E4M3FNUZ: return PJRT_Buffer_Type_F8E4M3FNUZ;
    case ElementType::kF8E5M2FNUZ: return PJRT_Buffer_Type_F8E5M2FNUZ;
    case ElementType::kC64: return PJRT_Buffer_Type_C64;
    case ElementType::kC128: return PJRT_Buffer_Type_C128;
  }
  // Never hand PJRT_Buffer_Type_INVALID to the plugin: it aborts the process.
  throw Error(ErrorCode::kInvalidArgument,
              "invalid ElementType " + std::to_string(static_cast<int>(type)));
}

ElementType FromPjrt(PJRT_Buffer_Type type) {
  switch (type) {
    case PJRT_Buffer_Type_PRED: return ElementType::kPred;
    case PJRT_Buffer_Type_S8: return ElementType::kS8;
    case PJRT_Buffer_Type_S16: return ElementType::kS16;
    case PJRT_Buffer_Type_S32: return ElementType::kS32;
    case PJRT_Buffer_Type_S64: return ElementType::kS64;
    case PJRT_Buffer_Type_U8: return ElementType::kU8;
    case PJRT_Buffer_Type_U16: return ElementType::kU16;
    case PJRT_Buffer_Type_U32: return ElementType::kU32;
    case PJRT_Buffer_Type_U64: return ElementType::kU64;
    case PJRT_Buffer_Type_F16: return ElementType::kF16;
    case PJRT_Buffer_Type_BF16: return ElementType::kBF16;
    case PJRT_Buffer_Type_F32: return ElementType::kF32;
    case PJRT_Buffer_Type_F64: return ElementType::kF64;
    case PJRT_Buffer_Type_F8E4M3FN: return ElementType::kF8E4M3FN;
    case PJRT_Buffer_Type_F8E5M2: return ElementType::kF8E5M2;
    case PJRT_Buffer_Type_F8E4M3FNUZ: return ElementType::kF8E4M3FNUZ;
    case PJRT_Buffer_Type_F8E5M2FNUZ: return ElementType::kF8E5M2FNUZ;
    case PJRT_Buffer_Type_C64: return ElementType::kC64;
    case PJRT_Buffer_Type_C128: return ElementType::kC128;
    default: break;
  }
  throw Error(ErrorCode::kUnimplemented,
              "PJRT buffer element type " + std::to_string(static_cast<int>(type)) +
                  " is not supported by torchtpu");
}

}  // namespace internal
}  // namespace torchtpu::pjrt
