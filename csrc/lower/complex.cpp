// Lowerings that build, take apart or conjugate complex values (StableHLO's
// complex<f32>/complex<f64> elements): torch.complex, torch.polar, abs and
// angle of a complex tensor, and the physical conjugate (the copy that
// resolves PyTorch's lazy conj bit). Arithmetic and the transcendental
// functions on complex values are the elementwise table's own lowerings:
// StableHLO's ops take complex operands directly.
#include "lower/lower_util.h"
#include "graph/lowering.h"

namespace torchtpu::lower {
namespace {

// conj(x) = re - i im; a real value is its own conjugate.
// attrs: none. inputs: x. result: x's type.
REGISTER_LOWERING("complex.conj", [](Builder& b, const graph::Node&, const Values& in) {
  Value x = in[0];
  if (x.dtype() == DType::kC32) return Values{FlipComplex32Signs(b, x, 0x80000000u)};
  if (!hlo::IsComplex(x.dtype())) return Values{x};
  return Values{b.MakeComplex(b.Real(x), b.Unary("negate", b.Imag(x)))};
});

// torch.complex(real, imag): attrs: 0 part dtype (f32/f64).
// inputs: real, imag (broadcast together).
REGISTER_LOWERING("complex.from_parts", [](Builder& b, const graph::Node& n, const Values& in) {
  const DType part = static_cast<DType>(n.IntAttr(0));
  // f16 parts make complex32: assembled in complex64 (f16 -> f32 is exact)
  // and packed by the conversion.
  if (part == DType::kF16) {
    Values v = Harmonize(b, {in[0], in[1]}, DType::kF32);
    return Values{b.Convert(b.MakeComplex(v[0], v[1]), DType::kC32)};
  }
  Values v = Harmonize(b, {in[0], in[1]}, part);
  return Values{b.MakeComplex(v[0], v[1])};
});

// torch.polar(abs, angle) = abs * (cos(angle) + i sin(angle)).
// attrs: 0 part dtype. inputs: abs, angle (broadcast together).
REGISTER_LOWERING("complex.polar", [](Builder& b, const graph::Node& n, const Values& in) {
  const DType part = static_cast<DType>(n.IntAttr(0));
  Values v = Harmonize(b, {in[0], in[1]}, part);
  return Values{b.MakeComplex(b.Mul(v[0], b.Unary("cosine", v[1])), b.Mul(v[0], b.Unary("sine", v[1])))};
});

// |x| of a complex x: stablehlo.abs takes complex and gives its part type
// (a hypot, so no overflow for large parts). inputs: x. result: real.
REGISTER_LOWERING("complex.abs", [](Builder& b, const graph::Node&, const Values& in) {
  Value x = in[0];
  return Values{b.Op("stablehlo.abs", {x}, {hlo::TensorType{hlo::ComplexPart(x.dtype()), x.shape()}})[0]};
});

// angle(x): atan2(im, re) of a complex x; of a real x, as PyTorch defines
// it: pi for x < 0, 0 otherwise, NaN kept. attrs: 0 result dtype (the part
// type; the default float for integers). inputs: x.
REGISTER_LOWERING("complex.angle", [](Builder& b, const graph::Node& n, const Values& in) {
  const DType result = static_cast<DType>(n.IntAttr(0));
  if (hlo::IsComplex(in[0].dtype())) {
    return Values{b.Convert(b.Binary("atan2", b.Imag(in[0]), b.Real(in[0])), result)};
  }
  Value x = b.Convert(in[0], result);
  Value negative = b.Cmp(x, Splat(b, 0, x), hlo::Compare::kLT);
  Value angle = b.Select(negative, Splat(b, 3.14159265358979323846, x), Splat(b, 0, x));
  return Values{b.Select(IsNan(b, x), x, angle)};
});

// real / imag parts as fresh values (not views). attrs: 0 which (0 real, 1 imag).
REGISTER_LOWERING("complex.part", [](Builder& b, const graph::Node& n, const Values& in) {
  return Values{n.IntAttr(0) == 0 ? b.Real(in[0]) : b.Imag(in[0])};
});

}  // namespace
}  // namespace torchtpu::lower
