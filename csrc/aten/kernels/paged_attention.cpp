// The paged KV cache ops of serving (torchtpu.vllm), as custom ops in the
// `torchtpu` namespace (torch.ops.torchtpu.*): a schema, a tpu kernel that
// checks its operands and runs the native lowering (lower/paged_attention.cpp),
// and a Meta kernel so torch.compile can trace them. No CPU kernel: these ops
// only exist for tpu tensors, so they can never fall back to the CPU.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "aten/kernels/registry.h"
#include "aten/runtime/op_call.h"

namespace torchtpu::aten {
namespace {

void CheckTpu(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, "torchtpu.", op, ": ", what,
              " must be a tpu tensor, got ", t.device());
}

void CheckInt(const at::Tensor& t, const char* op, const char* what) {
  TORCH_CHECK(t.scalar_type() == c10::kInt || t.scalar_type() == c10::kLong, "torchtpu.", op, ": ", what,
              " must be int32 or int64, got ", t.scalar_type());
}

// kv_cache [num_blocks, kv_heads, block_size, 2 * head]; key, value [tokens, kv_heads, head].
void CheckCache(const at::Tensor& kv_cache, int64_t kv_heads, int64_t head, const char* op) {
  TORCH_CHECK(kv_cache.dim() == 4 && kv_cache.size(1) == kv_heads && kv_cache.size(3) == 2 * head,
              "torchtpu.", op, ": kv_cache must be [num_blocks, ", kv_heads, ", block_size, ", 2 * head,
              "], got ", kv_cache.sizes());
  TORCH_CHECK(at::isFloatingType(kv_cache.scalar_type()), "torchtpu.", op,
              ": kv_cache must be floating point, got ", kv_cache.scalar_type());
}

void ReshapeAndCache(const at::Tensor& key, const at::Tensor& value, const at::Tensor& kv_cache,
                     const at::Tensor& slot_mapping) {
  const char* op = "reshape_and_cache";
  for (auto* t : {&key, &value, &kv_cache, &slot_mapping}) CheckTpu(*t, op, "every operand");
  TORCH_CHECK(key.dim() == 3 && value.sizes() == key.sizes(), "torchtpu.", op,
              ": key and value must both be [tokens, kv_heads, head], got ", key.sizes(), " and ", value.sizes());
  CheckCache(kv_cache, key.size(1), key.size(2), op);
  CheckInt(slot_mapping, op, "slot_mapping");
  TORCH_CHECK(slot_mapping.dim() == 1 && slot_mapping.size(0) == key.size(0), "torchtpu.", op,
              ": slot_mapping must be [", key.size(0), "], got ", slot_mapping.sizes());
  if (key.size(0) == 0) return;
  OpCall("paged.reshape_and_cache").In(kv_cache).In(key).In(value).In(slot_mapping).RunInto({kv_cache});
}

at::Tensor RaggedPagedAttention(const at::Tensor& query, const at::Tensor& kv_cache, const at::Tensor& block_table,
                                const at::Tensor& seq_lens, const at::Tensor& query_start_loc, double scale,
                                int64_t sliding_window, int64_t num_blocks_per_seq) {
  const char* op = "ragged_paged_attention";
  for (auto* t : {&query, &kv_cache, &block_table, &seq_lens, &query_start_loc}) CheckTpu(*t, op, "every operand");
  TORCH_CHECK(query.dim() == 3, "torchtpu.", op, ": query must be [tokens, heads, head], got ", query.sizes());
  TORCH_CHECK(kv_cache.dim() == 4 && kv_cache.size(3) % 2 == 0, "torchtpu.", op,
              ": kv_cache must be [num_blocks, kv_heads, block_size, 2 * head], got ", kv_cache.sizes());
  CheckCache(kv_cache, kv_cache.size(1), query.size(2), op);
  TORCH_CHECK(query.size(1) % kv_cache.size(1) == 0, "torchtpu.", op, ": ", query.size(1),
              " query heads are not a multiple of ", kv_cache.size(1), " kv heads");
  // An FP8 cache (vLLM's kv_cache_dtype="fp8") is read in the query's dtype;
  // the caller folds the cache's scales into `scale` and the output.
  const bool fp8_cache = kv_cache.scalar_type() == c10::kFloat8_e4m3fn || kv_cache.scalar_type() == c10::kFloat8_e5m2;
  TORCH_CHECK(query.scalar_type() == kv_cache.scalar_type() || fp8_cache, "torchtpu.", op, ": query is ",
              query.scalar_type(), " but kv_cache is ", kv_cache.scalar_type());
  for (auto [t, what] : {std::pair{&block_table, "block_table"}, {&seq_lens, "seq_lens"},
                         {&query_start_loc, "query_start_loc"}})
    CheckInt(*t, op, what);
  TORCH_CHECK(block_table.dim() == 2 && seq_lens.dim() == 1 && query_start_loc.dim() == 1 &&
                  block_table.size(0) == seq_lens.size(0) && query_start_loc.size(0) == seq_lens.size(0) + 1 &&
                  seq_lens.size(0) > 0,
              "torchtpu.", op, ": expected block_table [seqs, blocks], seq_lens [seqs], query_start_loc [seqs + 1] "
              "with seqs > 0, got ", block_table.sizes(), ", ", seq_lens.sizes(), ", ", query_start_loc.sizes());
  TORCH_CHECK(num_blocks_per_seq > 0 && num_blocks_per_seq <= block_table.size(1), "torchtpu.", op,
              ": num_blocks_per_seq must be in [1, ", block_table.size(1), "], got ", num_blocks_per_seq);
  TORCH_CHECK(sliding_window >= 0, "torchtpu.", op, ": sliding_window must be >= 0 (0: none), got ", sliding_window);
  if (query.size(0) == 0) return at::empty_like(query);
  OpCall call("paged.ragged_attention");
  call.Attr(scale).Attr(sliding_window).Attr(num_blocks_per_seq);
  call.In(query).In(kv_cache).In(block_table).In(seq_lens).In(query_start_loc);
  return call.Run1();
}

// Meta kernels: shapes only, for torch.compile's fake tensors.
void ReshapeAndCacheMeta(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&) {}
at::Tensor RaggedPagedAttentionMeta(const at::Tensor& query, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                    const at::Tensor&, double, int64_t, int64_t) {
  return at::empty_like(query);
}

}  // namespace

void RegisterPagedAttention() {
  static torch::Library def(torch::Library::FRAGMENT, "torchtpu", std::nullopt, __FILE__, __LINE__);
  def.def("reshape_and_cache(Tensor key, Tensor value, Tensor(a!) kv_cache, Tensor slot_mapping) -> ()");
  def.def("ragged_paged_attention(Tensor query, Tensor kv_cache, Tensor block_table, Tensor seq_lens, "
          "Tensor query_start_loc, float scale, int sliding_window, int num_blocks_per_seq) -> Tensor");
  static torch::Library tpu(torch::Library::IMPL, "torchtpu", c10::DispatchKey::PrivateUse1, __FILE__, __LINE__);
  tpu.impl("reshape_and_cache", ReshapeAndCache);
  tpu.impl("ragged_paged_attention", RaggedPagedAttention);
  static torch::Library meta(torch::Library::IMPL, "torchtpu", c10::DispatchKey::Meta, __FILE__, __LINE__);
  meta.impl("reshape_and_cache", ReshapeAndCacheMeta);
  meta.impl("ragged_paged_attention", RaggedPagedAttentionMeta);
}

}  // namespace torchtpu::aten
