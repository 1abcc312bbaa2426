// ATen kernels of the indexing ops. Boolean masks become int64 indices via
// nonzero (their count must be read back: output shapes depend on data).
#include <ATen/ATen.h>
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/native/Resize.h>

#include <sstream>

#include "aten/runtime/dtype.h"
#include "aten/runtime/op_call.h"
#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

void CheckIndex(const at::Tensor& index, const char* name) {
  TORCH_CHECK_INDEX(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt, name,
                    "(): Expected dtype int32/int64 for index");
}

// The written tensor of scatter_, index_add_, index_copy_ and their out=
// forms: the CPU refuses one whose elements share memory (index_fill_ and
// index_put_ only warn there, and are not checked).
const at::Tensor& Written(const at::Tensor& t) {
  at::assert_no_internal_overlap(t);
  return t;
}

at::Tensor IndexSelect(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  CheckIndex(index, "index_select");
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_select(): Index is supposed to be a vector");
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  if (self.dim() == 0) return self.clone();
  if (self.size(d) == 0) {
    // Nothing to gather from: XLA refuses the program, and the CPU refuses
    // any index at the op (in its own words for 1-d and n-d inputs).
    if (index.numel() == 0) {
      std::vector<int64_t> shape = self.sizes().vec();
      shape[d] = 0;
      return at::empty(shape, self.options());
    }
    TORCH_CHECK_INDEX(self.dim() != 1, "index out of range in self");
    TORCH_CHECK(false, "index_select(): self indexing axis dim should be positive");
  }
  at::Tensor r = OpCall("index_select").Attr(d).CheckIndices(false).In(self).In(index.reshape({-1})).Run1();
  return r;
}
at::Tensor& IndexSelectOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  at::Tensor r = IndexSelect(self, dim, index);
  at::native::resize_output(out, r.sizes());
  at::assert_no_internal_overlap(out);
  at::assert_no_overlap(out, self);
  at::assert_no_overlap(out, index);
  out.copy_(r);
  return out;
}

at::Tensor Gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad) {
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  // As on CPU, an empty index of any dtype gives an empty result.
  if (index.numel() == 0) return at::empty(index.sizes(), self.options());
  CheckIndex(index, "gather");
  return OpCall("gather").Attr(d).CheckIndices(false).In(self).In(index).Run1();
}
at::Tensor& GatherOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool sparse_grad, at::Tensor& out) {
  at::native::resize_output(out, index.sizes());
  if (index.numel() == 0) return out;
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall("gather").Attr(d).CheckIndices(false).In(self).In(index).RunInto({out});
  return out;
}

OpCall ScatterCall(const at::Tensor& self, int64_t dim, const at::Tensor& index, const std::string& reduce) {
  // The CPU takes an empty index of any dtype (gather's backward passes one
  // on); it scatters nothing, as an empty int64 index does.
  const bool empty = index.numel() == 0;
  if (!empty) CheckIndex(index, "scatter");
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall call("scatter");
  call.Attr(d).Attr(reduce).CheckIndices(false).In(self).In(empty ? index.to(c10::kLong) : index);
  return call;
}
std::string Reduce(c10::string_view reduce) {
  if (reduce == "add" || reduce == "sum") return "add";
  if (reduce == "multiply" || reduce == "prod") return "multiply";
  TORCH_CHECK(false, "torchtpu: scatter reduce '", std::string(reduce), "' is not supported");
}
at::Tensor ScatterSrc(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return ScatterCall(self, dim, index, "").In(src).Run1();
}
at::Tensor ScatterValue(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  return ScatterCall(self, dim, index, "").Scalar(value, self.scalar_type()).Run1();
}
at::Tensor& ScatterSrcInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  ScatterCall(self, dim, index, "").In(src).RunInto({Written(self)});
  return self;
}
at::Tensor& ScatterValueInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  ScatterCall(self, dim, index, "").Scalar(value, self.scalar_type()).RunInto({Written(self)});
  return self;
}
at::Tensor& ScatterSrcOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  ScatterCall(self, dim, index, "").In(src).RunInto({Written(out)});
  return out;
}
at::Tensor& ScatterValueOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  ScatterCall(self, dim, index, "").Scalar(value, self.scalar_type()).RunInto({Written(out)});
  return out;
}
at::Tensor ScatterReduce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src, c10::string_view reduce) {
  return ScatterCall(self, dim, index, Reduce(reduce)).In(src).Run1();
}
at::Tensor& ScatterReduceInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src, c10::string_view reduce) {
  ScatterCall(self, dim, index, Reduce(reduce)).In(src).RunInto({Written(self)});
  return self;
}
at::Tensor ScatterAdd(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  return ScatterCall(self, dim, index, "add").In(src).Run1();
}
at::Tensor& ScatterAddInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src) {
  ScatterCall(self, dim, index, "add").In(src).RunInto({Written(self)});
  return self;
}
at::Tensor& ScatterAddOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& src, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  ScatterCall(self, dim, index, "add").In(src).RunInto({Written(out)});
  return out;
}

at::Tensor Nonzero(const at::Tensor& self) {
  int64_t count = self.ne(0).sum().item<int64_t>();
  if (self.dim() == 0) {
    return at::empty({count, 0}, self.options().dtype(c10::kLong));
  }
  if (count == 0 || self.numel() == 0) return at::empty({0, self.dim()}, self.options().dtype(c10::kLong));
  return OpCall("nonzero").Attr(count).In(self).Run1();
}
at::Tensor& NonzeroOut(const at::Tensor& self, at::Tensor& out) {
  at::Tensor r = Nonzero(self);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// Expands boolean masks into int64 indices and records where the indexed
// dims sit. Returns (positions, indices).
std::pair<std::vector<int64_t>, std::vector<at::Tensor>> ExpandIndices(
    const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  std::vector<int64_t> pos;
  std::vector<at::Tensor> idx;
  int64_t dim = 0;
  for (size_t i = 0; i < indices.size(); ++i) {
    std::optional<at::Tensor> t = indices[i];
    if (!t.has_value() || !t->defined()) {
      ++dim;
      continue;
    }
    // CPU index tensors are accepted, as CUDA accepts them.
    at::Tensor index = t->device() == self.device() ? *t : t->to(self.device());
    if (index.scalar_type() == c10::kBool || index.scalar_type() == c10::kByte) {
      for (int64_t j = 0; j < index.dim(); ++j) {
        TORCH_CHECK_INDEX(dim + j < self.dim() && index.size(j) == self.size(dim + j), "The shape of the mask ",
                          index.sizes(), " at index ", j, " does not match the shape of the indexed tensor ",
                          self.sizes(), " at index ", dim + j);
      }
      at::Tensor nz = Nonzero(index);
      for (int64_t j = 0; j < index.dim(); ++j) {
        pos.push_back(dim++);
        idx.push_back(nz.select(1, j));
      }
      continue;
    }
    TORCH_CHECK_INDEX(index.scalar_type() == c10::kLong || index.scalar_type() == c10::kInt,
                      "tensors used as indices must be long, int, byte or bool tensors");
    TORCH_CHECK_INDEX(dim < self.dim(), "too many indices for tensor of dimension ", self.dim());
    pos.push_back(dim++);
    idx.push_back(index);
  }
  return {pos, idx};
}

bool Adjacent(const std::vector<int64_t>& pos) {
  for (size_t i = 1; i < pos.size(); ++i) if (pos[i] != pos[i - 1] + 1) return false;
  return true;
}

// The shape advanced indexing gives (PyTorch's rule): the indices broadcast
// together to `broadcast`, which replaces the indexed dims where they sit if
// they are adjacent, or leads otherwise.
struct IndexedShape {
  std::vector<int64_t> broadcast;
  std::vector<int64_t> result;
  bool indexes_empty_dim = false;  // an indexed dim of self has size 0
};
IndexedShape ShapeOfIndex(const at::Tensor& self, const std::vector<int64_t>& pos, const std::vector<at::Tensor>& idx) {
  IndexedShape s;
  for (size_t i = 0; i < idx.size(); ++i) {
    try {
      s.broadcast = i == 0 ? idx[i].sizes().vec() : at::infer_size(s.broadcast, idx[i].sizes());
    } catch (const c10::Error&) {
      std::ostringstream shapes;
      for (size_t j = 0; j < idx.size(); ++j) shapes << (j ? ", " : "") << idx[j].sizes();
      TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ",
                        shapes.str());
    }
  }
  std::vector<bool> indexed(self.dim(), false);
  for (int64_t p : pos) {
    indexed[p] = true;
    if (self.size(p) == 0) s.indexes_empty_dim = true;
  }
  const bool adjacent = Adjacent(pos);
  if (!adjacent) s.result = s.broadcast;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (adjacent && d == pos.front()) s.result.insert(s.result.end(), s.broadcast.begin(), s.broadcast.end());
    if (!indexed[d]) s.result.push_back(self.size(d));
  }
  return s;
}

// Indexing that touches no element runs on the host, as the CPU's kernel
// does not run then either: a dim of size 0 indexed by any index is out of
// bounds (IndexError at the op), and an empty result needs no program (XLA
// refuses a gather along a dim of size 0, and the device-side range check of
// a program whose result is empty would only be read at an unrelated read).
// Returns whether the op is done.
bool IndexesNothing(const IndexedShape& s) {
  const int64_t count = c10::multiply_integers(s.broadcast);
  TORCH_CHECK_INDEX(!s.indexes_empty_dim || count == 0, "index is out of bounds for dimension with size 0");
  return c10::multiply_integers(s.result) == 0;
}

at::Tensor Index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  auto [pos, idx] = ExpandIndices(self, indices);
  if (pos.empty()) return self.clone();
  IndexedShape shape = ShapeOfIndex(self, pos, idx);
  if (IndexesNothing(shape)) return at::empty(shape.result, self.options());
  OpCall call("index");
  call.Attr(pos).Attr(!Adjacent(pos)).CheckIndices(true).In(self);
  for (const at::Tensor& t : idx) call.In(t);
  return call.Run1();
}
at::Tensor& IndexOut(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  at::Tensor r = Index(self, indices);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

OpCall IndexPutCall(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                    const at::Tensor& values, bool accumulate, bool* empty) {
  auto [pos, idx] = ExpandIndices(self, indices);
  OpCall call("index_put");
  *empty = pos.empty() || std::any_of(idx.begin(), idx.end(), [](const at::Tensor& t) { return t.numel() == 0; });
  if (!pos.empty()) {
    IndexedShape shape = ShapeOfIndex(self, pos, idx);
    if (IndexesNothing(shape)) {
      TORCH_CHECK(at::is_expandable_to(values.sizes(), shape.result), "shape mismatch: value tensor of shape ",
                  values.sizes(), " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(shape.result));
      *empty = true;
    }
  }
  call.Attr(pos).Attr(!Adjacent(pos)).Attr(accumulate).CheckIndices(true).In(self);
  for (const at::Tensor& t : idx) call.In(t);
  call.In(values.device() == self.device() ? values : values.to(self.device()));
  return call;
}
at::Tensor& IndexPutInplace(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                            const at::Tensor& values, bool accumulate) {
  bool empty = false;
  OpCall call = IndexPutCall(self, indices, values, accumulate, &empty);
  if (empty) {
    if (call.node().inputs.size() == 2) self.copy_(values.expand_as(self));  // no index: whole tensor
    return self;
  }
  call.RunInto({self});
  return self;
}
at::Tensor& IndexPutImpl(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                         const at::Tensor& values, bool accumulate, bool unsafe) {
  return IndexPutInplace(self, indices, values, accumulate);
}
at::Tensor IndexPut(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices,
                    const at::Tensor& values, bool accumulate) {
  at::Tensor r = self.clone();
  return IndexPutInplace(r, indices, values, accumulate);
}

at::Tensor& MaskedFillScalar(at::Tensor& self, const at::Tensor& mask, const c10::Scalar& value) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  OpCall("masked_fill").In(self).In(mask).Scalar(value, self.scalar_type()).RunInto({self});
  return self;
}
at::Tensor& MaskedFillTensor(at::Tensor& self, const at::Tensor& mask, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_fill_ only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
  OpCall("masked_fill").In(self).In(mask).In(value).RunInto({self});
  return self;
}

at::Tensor MaskedSelect(const at::Tensor& self, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "masked_select: expected BoolTensor for mask");
  std::vector<int64_t> shape = at::infer_size(self.sizes(), mask.sizes());
  c10::List<std::optional<at::Tensor>> indices;
  indices.push_back(mask.expand(shape));
  return Index(self.expand(shape), indices);
}
at::Tensor& MaskedSelectOut(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  at::Tensor r = MaskedSelect(self, mask);
  at::native::resize_output(out, r.sizes());
  out.copy_(r);
  return out;
}

// take counts negative indices from the end, as advanced indexing of the
// flattened tensor does (index_select would refuse them).
at::Tensor Take(const at::Tensor& self, const at::Tensor& index) {
  CheckIndex(index, "take");
  c10::List<std::optional<at::Tensor>> indices;
  indices.push_back(index);
  return Index(self.reshape({-1}), indices);
}

// index_add / index_copy / index_fill: a scatter along `dim` whose updates
// are `source` (or the fill value) with `dim` as the scatter dimension.
// `add_once` (index_add only): the lowering accumulates bf16/f16 in f32 and
// rounds once instead of after every add.
OpCall IndexScatter(const at::Tensor& self, int64_t dim, const at::Tensor& index, const std::string& mode,
                    bool negative_ok = false, bool add_once = false) {
  CheckIndex(index, ("index_" + mode).c_str());
  TORCH_CHECK_INDEX(index.dim() <= 1, "index_", mode, "_(): Index is supposed to be a vector");
  int64_t d = c10::maybe_wrap_dim(dim, std::max<int64_t>(self.dim(), 1));
  OpCall call("index_scatter");
  // index_fill counts negative indices from the end; index_add and
  // index_copy refuse them, as on the CPU.
  call.Attr(self.dim() == 0 ? int64_t{0} : d).Attr(add_once ? std::string("add_once") : mode)
      .CheckIndices(negative_ok).In(self).In(index.reshape({-1}));
  return call;
}

// The CPU's overlap checks of the in-place / out= forms (its meta kernels):
// a written tensor may not overlap itself (an expanded self), the index or
// the source; each raises "unsupported operation: ...".
void CheckWriteOverlap(const at::Tensor& dst, const at::Tensor& index, const at::Tensor& source) {
  at::assert_no_internal_overlap(dst);
  at::assert_no_overlap(dst, index);
  at::assert_no_overlap(dst, source);
}

// PyTorch's CPU index_add_ hands a tensor of rank > 1 to scatter_add_ (which
// accumulates bf16/f16 in f32 and rounds once) when it adds along the first
// or last dim, alpha is 1, the index is int64 and source matches self
// outside `dim`; otherwise it adds slice by slice, rounding after each add.
bool IndexAddRoundsOnce(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        const c10::Scalar& alpha) {
  if (self.dim() <= 1 || source.dim() != self.dim() || index.scalar_type() != c10::kLong) return false;
  if (!at::isReducedFloatingType(self.scalar_type())) return false;
  const bool one = alpha.isFloatingPoint() ? alpha.toDouble() == 1.0 : alpha.isIntegral(true) && alpha.toLong() == 1;
  if (!one) return false;
  int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  if (d != 0 && d != self.dim() - 1) return false;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (i != d && self.size(i) != source.size(i)) return false;
  }
  return true;
}
at::Tensor& IndexAddOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                        const c10::Scalar& alpha, at::Tensor& out) {
  OpCall call = IndexScatter(self, dim, index, "add", false, IndexAddRoundsOnce(self, dim, index, source, alpha));
  call.In(source).Scalar(alpha, self.scalar_type());
  at::native::resize_output(out, self.sizes());
  CheckWriteOverlap(out, index, source);
  call.RunInto({Written(out)});
  return out;
}
at::Tensor IndexAdd(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                    const c10::Scalar& alpha) {
  return IndexScatter(self, dim, index, "add", false, IndexAddRoundsOnce(self, dim, index, source, alpha))
      .In(source).Scalar(alpha, self.scalar_type()).Run1();
}
at::Tensor& IndexAddInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source,
                            const c10::Scalar& alpha) {
  CheckWriteOverlap(self, index, source);
  IndexScatter(self, dim, index, "add", false, IndexAddRoundsOnce(self, dim, index, source, alpha))
      .In(source)
      .Scalar(alpha, self.scalar_type())
      .RunInto({Written(self)});
  return self;
}
at::Tensor IndexCopy(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  return IndexScatter(self, dim, index, "copy").In(source).Run1();
}
at::Tensor& IndexCopyInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source) {
  CheckWriteOverlap(self, index, source);
  IndexScatter(self, dim, index, "copy").In(source).RunInto({Written(self)});
  return self;
}
at::Tensor& IndexCopyOut(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& source, at::Tensor& out) {
  at::native::resize_output(out, self.sizes());
  CheckWriteOverlap(out, index, source);
  IndexScatter(self, dim, index, "copy").In(source).RunInto({Written(out)});
  return out;
}
// The CPU's checks of index_fill: a complex fill value into a real tensor
// raises (rather than failing to convert), the written tensor may not
// overlap the index, and an expanded self only warns.
void CheckIndexFill(const at::Tensor& self, const at::Tensor& index, const c10::Scalar* value, bool inplace) {
  TORCH_CHECK(!value || !value->isComplex() || self.is_complex(),
              "index_fill_(): Converting complex Scalar to non-complex type is not supported");
  if (!inplace) return;
  if (at::has_internal_overlap(self) == at::MemOverlap::Yes) {
    TORCH_WARN("Use of index_fill_ on expanded tensors is deprecated. "
               "Please clone() the tensor before performing this operation. "
               "This also applies to advanced indexing e.g. tensor[mask] = scalar");
  }
  at::assert_no_overlap(self, index);
}
at::Tensor& IndexFillInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  CheckIndexFill(self, index, &value, true);
  IndexScatter(self, dim, index, "copy", true).Scalar(value, self.scalar_type()).RunInto({self});
  return self;
}
at::Tensor& IndexFillTensorInplace(at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
              value.dim(), " dimension(s).");
  CheckIndexFill(self, index, nullptr, true);
  IndexScatter(self, dim, index, "copy", true).In(value).RunInto({self});
  return self;
}
at::Tensor IndexFill(const at::Tensor& self, int64_t dim, const at::Tensor& index, const c10::Scalar& value) {
  CheckIndexFill(self, index, &value, false);
  return IndexScatter(self, dim, index, "copy", true).Scalar(value, self.scalar_type()).Run1();
}
at::Tensor IndexFillTensor(const at::Tensor& self, int64_t dim, const at::Tensor& index, const at::Tensor& value) {
  return IndexScatter(self, dim, index, "copy", true).In(value).Run1();
}

}  // namespace

void RegisterIndexing() {
  Impl("take", Take);
  Impl("index_add", IndexAdd);
  Impl("index_add_", IndexAddInplace);
  Impl("index_add.out", IndexAddOut);
  Impl("index_copy", IndexCopy);
  Impl("index_copy_", IndexCopyInplace);
  Impl("index_copy.out", IndexCopyOut);
  Impl("index_fill_.int_Scalar", IndexFillInplace);
  Impl("index_fill_.int_Tensor", IndexFillTensorInplace);
  Impl("index_fill.int_Scalar", IndexFill);
  Impl("index_fill.int_Tensor", IndexFillTensor);
  Impl("index_select", IndexSelect);
  Impl("index_select.out", IndexSelectOut);
  Impl("gather", Gather);
  Impl("gather.out", GatherOut);
  Impl("scatter.src", ScatterSrc);
  Impl("scatter.value", ScatterValue);
  Impl("scatter_.src", ScatterSrcInplace);
  Impl("scatter_.value", ScatterValueInplace);
  Impl("scatter.src_out", ScatterSrcOut);
  Impl("scatter.value_out", ScatterValueOut);
  Impl("scatter.reduce", ScatterReduce);
  Impl("scatter_.reduce", ScatterReduceInplace);
  Impl("scatter_add", ScatterAdd);
  Impl("scatter_add_", ScatterAddInplace);
  Impl("scatter_add.out", ScatterAddOut);
  Impl("nonzero", Nonzero);
  Impl("nonzero.out", NonzeroOut);
  Impl("index.Tensor", Index);
  Impl("index.Tensor_out", IndexOut);
  Impl("index_put_", IndexPutInplace);
  Impl("index_put", IndexPut);
  Impl("_index_put_impl_", IndexPutImpl);
  Impl("masked_fill_.Scalar", MaskedFillScalar);
  Impl("masked_fill_.Tensor", MaskedFillTensor);
  Impl("masked_select", MaskedSelect);
  Impl("masked_select.out", MaskedSelectOut);
}

}  // namespace torchtpu::aten
