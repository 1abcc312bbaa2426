// Ops whose output's length depends on the data: bincount, unique (sorted),
// unique_consecutive, repeat_interleave. Each reads one small tensor to the
// host for that length (as CUDA's kernels do), and computes the rest on the
// device with native ops (sort, cumsum, scatter_reduce, index_add,
// searchsorted). And nonzero_static, whose length the caller fixes: no host
// read.
#include <ATen/ATen.h>

#include <algorithm>

#include "aten/kernels/registry.h"

namespace torchtpu::aten {
namespace {

at::Tensor Bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights, int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK_NOT_IMPLEMENTED(at::isIntegralType(self.scalar_type(), /*includeBool=*/false),
                              "\"bincount_cpu\" not implemented for '", c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  const bool weighted = weights.has_value() && weights->defined();
  if (weighted) {
    TORCH_CHECK(weights->dim() == 1 && weights->size(0) == self.size(0),
                "weights should be 1-d and have the same length as input");
  }
  // As the CPU: counts are int64, float weights sum in float, others in double.
  const c10::ScalarType out_type = !weighted ? c10::kLong
                                   : weights->scalar_type() == c10::kFloat ? c10::kFloat : c10::kDouble;
  int64_t bins = minlength;
  if (self.numel() > 0) {
    auto [lo, hi] = at::aminmax(self);
    at::Tensor range = at::stack({lo, hi}).to(c10::kLong).cpu();  // the one host read
    TORCH_CHECK(range[0].item<int64_t>() >= 0, "bincount only supports 1-d non-negative integral inputs.");
    bins = std::max(bins, range[1].item<int64_t>() + 1);
  }
  at::Tensor out = at::zeros({bins}, self.options().dtype(out_type));
  if (self.numel() == 0) return out;
  at::Tensor values = weighted ? weights->to(out_type) : at::ones({self.size(0)}, out.options());
  return out.index_add_(0, self.to(c10::kLong), values);
}

// Groups of equal neighbours along the rows of `rows` ([n, ...]): the group
// of each row, and the number of groups (the one host read).
std::pair<at::Tensor, int64_t> ConsecutiveGroups(const at::Tensor& rows) {
  const int64_t n = rows.size(0);
  at::Tensor differs = rows.narrow(0, 1, n - 1).ne(rows.narrow(0, 0, n - 1));
  if (differs.dim() > 1) differs = differs.flatten(1).any(1);
  at::Tensor is_new = at::cat({at::ones({1}, differs.options()), differs});
  at::Tensor group = is_new.cumsum(0, c10::kLong).sub_(1);
  return {group, group[n - 1].item<int64_t>() + 1};
}

// (values, inverse, counts) of the groups of consecutive equal rows of
// `rows` (its first dimension). `order`: where each row came from (a sort's
// permutation), so the inverse refers to the original positions.
std::tuple<at::Tensor, at::Tensor, at::Tensor> Collapse(const at::Tensor& rows, const std::optional<at::Tensor>& order,
                                                        bool return_inverse, bool return_counts) {
  const int64_t n = rows.size(0);
  auto [group, groups] = ConsecutiveGroups(rows);
  at::Tensor positions = at::arange(n, group.options());
  at::Tensor first = at::zeros({groups}, group.options()).scatter_reduce_(0, group, positions, "amin", false);
  at::Tensor values = rows.index_select(0, first);
  at::Tensor inverse = at::empty({0}, group.options()), counts = at::empty({0}, group.options());
  if (return_inverse) inverse = order ? at::empty({n}, group.options()).index_copy_(0, *order, group) : group;
  if (return_counts) counts = at::zeros({groups}, group.options()).index_add_(0, group, at::ones_like(group));
  return {values, inverse, counts};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> Unique2(const at::Tensor& self, bool /*sorted: always*/,
                                                       bool return_inverse, bool return_counts) {
  at::Tensor flat = self.flatten();
  if (flat.numel() == 0) {
    auto none = at::empty({0}, self.options().dtype(c10::kLong));
    return {flat, return_inverse ? at::empty(self.sizes(), none.options()) : none, none};
  }
  // Sorted, as CUDA returns it whatever `sorted` says; the CPU's unsorted
  // order comes from a hash set and is not specified.
  auto [sorted_values, order] = flat.sort(/*stable=*/true, 0, false);
  auto [values, inverse, counts] = Collapse(sorted_values, order, return_inverse, return_counts);
  if (return_inverse) inverse = inverse.reshape(self.sizes());
  return {values, inverse, counts};
}

std::tuple<at::Tensor, at::Tensor> Unique(const at::Tensor& self, bool sorted, bool return_inverse) {
  auto [values, inverse, counts] = Unique2(self, sorted, return_inverse, false);
  return {values, inverse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> UniqueConsecutive(const at::Tensor& self, bool return_inverse,
                                                                 bool return_counts, std::optional<int64_t> dim) {
  if (!dim.has_value()) {
    at::Tensor flat = self.flatten();
    if (flat.numel() == 0) {
      auto none = at::empty({0}, self.options().dtype(c10::kLong));
      return {flat, return_inverse ? at::empty(self.sizes(), none.options()) : none, none};
    }
    auto [values, inverse, counts] = Collapse(flat, std::nullopt, return_inverse, return_counts);
    if (return_inverse) inverse = inverse.reshape(self.sizes());
    return {values, inverse, counts};
  }
  const int64_t d = c10::maybe_wrap_dim(*dim, self.dim());
  TORCH_CHECK(self.size(d) > 0 || self.numel() == 0, "unique_consecutive: dimension ", d, " is empty");
  if (self.size(d) == 0) {
    auto none = at::empty({0}, self.options().dtype(c10::kLong));
    return {self, return_inverse ? at::empty({0}, none.options()) : none, none};
  }
  auto [values, inverse, counts] = Collapse(self.movedim(d, 0), std::nullopt, return_inverse, return_counts);
  return {values.movedim(0, d), inverse, counts};
}

// repeats [n] -> the index of each output position: searchsorted of the
// positions in the running sum of the repeats.
at::Tensor RepeatInterleave(const at::Tensor& repeats, std::optional<c10::SymInt> output_size) {
  TORCH_CHECK(repeats.dim() == 1, "repeat_interleave only accept 1D vector as repeat");
  TORCH_CHECK_NOT_IMPLEMENTED(repeats.scalar_type() == c10::kLong || repeats.scalar_type() == c10::kInt,
                              "\"repeat_interleave_cpu\" not implemented for '",
                              c10::toString(repeats.scalar_type()), "'");
  if (repeats.numel() == 0) return at::empty({0}, repeats.options());
  at::Tensor ends = repeats.cumsum(0, c10::kLong);
  at::Tensor host = at::stack({repeats.min().to(c10::kLong), ends[-1]}).cpu();  // the one host read
  TORCH_CHECK(host[0].item<int64_t>() >= 0, "repeats can not be negative");
  const int64_t total = output_size ? output_size->expect_int() : host[1].item<int64_t>();
  at::Tensor positions = at::arange(total, ends.options());
  return at::searchsorted(ends, positions, repeats.scalar_type() == c10::kInt, /*right=*/true);
}

// nonzero with a fixed number of rows: no host read at all. Each nonzero
// element's rank among them (a running count) is its row; elements past
// `size` go to a spare row that is dropped, missing rows keep fill_value.
at::Tensor NonzeroStatic(const at::Tensor& self, int64_t size, int64_t fill_value) {
  TORCH_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer");
  const int64_t rank = self.dim();
  at::Tensor out = at::full({size + 1, rank}, fill_value, self.options().dtype(c10::kLong));
  if (self.numel() == 0 || rank == 0 || size == 0) return out.narrow(0, 0, size).clone();
  at::Tensor nonzero = self.flatten().ne(0);
  at::Tensor row = nonzero.cumsum(0, c10::kLong).sub_(1);
  at::Tensor target = at::where(nonzero.logical_and(row.lt(size)), row, size);
  // Coordinates of every flat position, [numel, rank].
  at::Tensor flat = at::arange(self.numel(), out.options());
  std::vector<at::Tensor> coords;
  int64_t stride = 1;
  std::vector<int64_t> strides(rank);
  for (int64_t d = rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= self.size(d);
  }
  for (int64_t d = 0; d < rank; ++d) coords.push_back(flat.div(strides[d], "floor").remainder(self.size(d)));
  return out.index_copy_(0, target, at::stack(coords, 1)).narrow(0, 0, size).clone();
}

}  // namespace

void RegisterDataDependent() {
  Impl("nonzero_static", NonzeroStatic);
  Impl("bincount", Bincount);
  Impl("_unique2", Unique2);
  Impl("_unique", Unique);
  Impl("unique_consecutive", UniqueConsecutive);
  Impl("repeat_interleave.Tensor", RepeatInterleave);
}

}  // namespace torchtpu::aten
