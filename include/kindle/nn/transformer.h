// MultiheadAttention, the Transformer encoder and decoder (layers and stacks) and Transformer, with Python's parameter and
// submodule names (in_proj_weight, out_proj.weight, self_attn.in_proj_bias, linear1, norm2, ...),
// mask conventions and initialisation, so their state dicts are torch's and kindle.nn's.
//
// Masks: key_padding_mask (N, S) and attn_mask (L, S) or (N * heads, L, S), bool (true = not
// attended) or additive float. An undefined Tensor means no mask.
#pragma once
#include "kindle/nn/container.h"
#include "kindle/nn/layers.h"

namespace kindle::nn {

class MultiheadAttentionImpl : public Module {
 public:
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options);
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  // Self-attention of x (query = key = value), output only.
  Tensor forward(const Tensor& x) override;
  // query (L, N, E) ((N, L, E) with batch_first) or unbatched (L, E); returns (output, attention
  // weights averaged over heads, or per head, or undefined when need_weights is false).
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true,
                                     bool is_causal = false);
  void reset_parameters();
  KINDLE_MODULE_CALL

  MultiheadAttentionOptions options;
  int64_t head_dim;
  // in_proj_weight (3E, E) when kdim == vdim == E, else q/k/v_proj_weight; bias_k/v with add_bias_kv.
  Tensor in_proj_weight, q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, bias_k, bias_v;
  Linear out_proj{nullptr};
};
KINDLE_MODULE(MultiheadAttention);

class TransformerEncoderLayerImpl : public Module {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& options);
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  Tensor forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask = {},
                 bool is_causal = false);
  KINDLE_MODULE_CALL

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr};

 private:
  Tensor activation(const Tensor& x) const;
};
KINDLE_MODULE(TransformerEncoderLayer);

// num_layers copies of one encoder layer (equal initial weights, as Python's deep copies), then
// an optional final LayerNorm(d_model) named "norm".
class TransformerEncoderImpl : public Module {
 public:
  TransformerEncoderImpl(const TransformerEncoderLayerOptions& layer, int64_t num_layers, bool final_norm = false);
  Tensor forward(const Tensor& src) override { return forward(src, Tensor()); }
  // is_causal: nullopt detects whether mask is exactly the causal mask.
  Tensor forward(const Tensor& src, const Tensor& mask, const Tensor& src_key_padding_mask = {},
                 std::optional<bool> is_causal = std::nullopt);
  KINDLE_MODULE_CALL

  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};  // null without final_norm
  int64_t num_layers;
};
KINDLE_MODULE(TransformerEncoder);

class TransformerDecoderLayerImpl : public Module {
 public:
  explicit TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& options);
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  Tensor forward(const Tensor& tgt) override { return forward(tgt, tgt); }
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 bool tgt_is_causal = false, bool memory_is_causal = false);
  KINDLE_MODULE_CALL

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn{nullptr}, multihead_attn{nullptr};
  Linear linear1{nullptr}, linear2{nullptr};
  Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr}, dropout3{nullptr};
  LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
};
KINDLE_MODULE(TransformerDecoderLayer);

// num_layers copies of one decoder layer (equal initial weights), then an optional final norm.
class TransformerDecoderImpl : public Module {
 public:
  TransformerDecoderImpl(const TransformerDecoderLayerOptions& layer, int64_t num_layers, bool final_norm = false);
  Tensor forward(const Tensor& tgt) override { return forward(tgt, tgt); }
  // tgt_is_causal: nullopt detects whether tgt_mask is exactly the causal mask.
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {},
                 std::optional<bool> tgt_is_causal = std::nullopt, bool memory_is_causal = false);
  KINDLE_MODULE_CALL

  ModuleList layers{nullptr};
  LayerNorm norm{nullptr};
  int64_t num_layers;
};
KINDLE_MODULE(TransformerDecoder);

// The encoder-decoder model of "Attention Is All You Need": encoder and decoder stacks with
// final norms, every weight matrix re-drawn xavier_uniform_ (as Python's nn.Transformer).
class TransformerImpl : public Module {
 public:
  explicit TransformerImpl(const TransformerOptions& options = {});
  Tensor forward(const Tensor& src) override { return forward(src, src); }
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  KINDLE_MODULE_CALL

  TransformerOptions options;
  TransformerEncoder encoder{nullptr};
  TransformerDecoder decoder{nullptr};
};
KINDLE_MODULE(Transformer);

// (sz, sz) float mask: -inf above the diagonal (future positions), 0 elsewhere.
Tensor generate_square_subsequent_mask(int64_t sz, DType dtype = kFloat32);

}  // namespace kindle::nn
