// MultiheadAttention and the Transformer encoder, with Python's parameter names and construction
// order. The attention is the core op multi_head_attention_forward (csrc/nn), which Python's
// nn.MultiheadAttention runs too.
#include "kindle/nn/transformer.h"

#include <cmath>

#include "kindle/autograd.h"
#include "kindle/nn/init.h"
#include "kindle/operators.h"
#include "util.h"

namespace kindle::nn {

using detail::new_weight;
using detail::opt;

namespace {

// Bool masks (true = masked out) become additive float masks (-inf where masked).
Tensor canonical_mask(const Tensor& mask, const char* name, DType target) {
  if (!mask.defined()) return mask;
  KINDLE_CHECK(mask.dtype() == kBool || mask.is_floating_point(), "only bool and floating types of ", name,
               " are supported");
  if (mask.is_floating_point()) return mask;
  return zeros_like(mask, target).masked_fill_(mask, scalar_to_tensor(-INFINITY));
}

// n layers built from one options, all starting from the first one's weights: Python deep-copies
// one layer, so the random stream advances once. The copies are built with the stream rewound,
// then given the weights.
template <typename Layer>
void add_clones(ModuleListImpl& list, const TransformerEncoderLayerOptions& o, int64_t n) {
  Layer first(o);
  StateDict weights = first->state_dict();
  Generator& gen = default_generator();
  std::vector<uint8_t> state(GeneratorImpl::kStateBytes);
  gen->get_state(state.data());
  list.push_back(std::move(first));
  for (int64_t i = 1; i < n; ++i) {
    Layer copy(o);
    copy->load_state_dict(weights);
    gen->set_state(state.data(), state.size());
    list.push_back(std::move(copy));
  }
}

LayerNormOptions final_norm_options(const TransformerEncoderLayerOptions& o) {
  return LayerNormOptions(o.d_model()).eps(o.layer_norm_eps()).bias(o.bias()).dtype(o.dtype());
}

int64_t seq_len(const Tensor& x, bool batch_first) { return x.dim() == 2 ? x.size(0) : x.size(batch_first ? 1 : 0); }

// is_causal unset: whether mask is exactly the causal mask of the sequence.
bool detect_causal(const Tensor& mask, std::optional<bool> is_causal, int64_t seq) {
  if (is_causal || !mask.defined()) return is_causal.value_or(false);
  Tensor c = generate_square_subsequent_mask(seq, mask.dtype());
  return mask.sizes() == c.sizes() && equal(mask, c);
}

}  // namespace

Tensor generate_square_subsequent_mask(int64_t sz, DType dtype) {
  return full({sz, sz}, Scalar(-INFINITY), dtype).triu(1);
}

// ---- MultiheadAttention

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& o) : options(o) {
  int64_t E = o.embed_dim();
  KINDLE_CHECK_VALUE(E > 0 && o.num_heads() > 0, "embed_dim and num_heads must be greater than 0, got embed_dim=", E,
                     " and num_heads=", o.num_heads(), " instead");
  head_dim = E / o.num_heads();
  KINDLE_CHECK(head_dim * o.num_heads() == E, "embed_dim must be divisible by num_heads");
  int64_t kdim = o.kdim().value_or(E), vdim = o.vdim().value_or(E);
  if (kdim != E || vdim != E) {
    q_proj_weight = register_parameter("q_proj_weight", new_weight({E, E}, o.dtype()));
    k_proj_weight = register_parameter("k_proj_weight", new_weight({E, kdim}, o.dtype()));
    v_proj_weight = register_parameter("v_proj_weight", new_weight({E, vdim}, o.dtype()));
    register_parameter("in_proj_weight", Tensor());
  } else {
    in_proj_weight = register_parameter("in_proj_weight", new_weight({3 * E, E}, o.dtype()));
    register_parameter("q_proj_weight", Tensor());
    register_parameter("k_proj_weight", Tensor());
    register_parameter("v_proj_weight", Tensor());
  }
  in_proj_bias = register_parameter("in_proj_bias", o.bias() ? new_weight({3 * E}, o.dtype()) : Tensor());
  out_proj = register_module("out_proj", Linear(LinearOptions(E, E).bias(o.bias()).dtype(o.dtype())));
  if (o.add_bias_kv()) {
    bias_k = register_parameter("bias_k", new_weight({1, 1, E}, o.dtype()));
    bias_v = register_parameter("bias_v", new_weight({1, 1, E}, o.dtype()));
  }
  reset_parameters();
}

void MultiheadAttentionImpl::reset_parameters() {
  if (in_proj_weight.defined()) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::constant_(in_proj_bias, 0.0);
    init::constant_(out_proj->bias, 0.0);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

Tensor MultiheadAttentionImpl::forward(const Tensor& x) { return std::get<0>(forward(x, x, x, {}, false)); }

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query_, const Tensor& key_, const Tensor& value_,
                                                       const Tensor& key_padding_mask, bool need_weights,
                                                       const Tensor& attn_mask, bool average_attn_weights,
                                                       bool is_causal) {
  const auto& o = options;
  Tensor query = query_, key = key_, value = value_;
  bool batched_input = query.dim() == 3;
  if (o.batch_first() && batched_input) {
    // Keep the identities (q is k is v) that let the projection run as one GEMM.
    bool kv_same = key.is_same(value), qk_same = query.is_same(key);
    query = query.transpose(1, 0);
    key = qk_same ? query : key.transpose(1, 0);
    value = kv_same ? key : value.transpose(1, 0);
  }

  auto [out, weights] = kindle::multi_head_attention_forward(
      query, key, value, o.embed_dim(), o.num_heads(), opt(in_proj_weight), opt(in_proj_bias), opt(bias_k),
      opt(bias_v), o.add_zero_attn(), o.dropout(), out_proj->weight, opt(out_proj->bias), is_training(),
      opt(key_padding_mask), need_weights, opt(attn_mask), !in_proj_weight.defined(), opt(q_proj_weight),
      opt(k_proj_weight), opt(v_proj_weight), std::nullopt, std::nullopt, average_attn_weights, is_causal);
  if (o.batch_first() && batched_input) out = out.transpose(1, 0);
  return {out, weights};
}

// ---- encoder layer

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerEncoderLayerOptions& o) : options(o) {
  KINDLE_CHECK(o.activation() == "relu" || o.activation() == "gelu", "activation should be relu/gelu, not ",
               o.activation());
  // Construction order is Python's: the same seed draws the same weights.
  self_attn = register_module("self_attn", MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead())
                                                                  .dropout(o.dropout())
                                                                  .bias(o.bias())
                                                                  .batch_first(o.batch_first())
                                                                  .dtype(o.dtype())));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias()).dtype(o.dtype())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias()).dtype(o.dtype())));
  auto ln = LayerNormOptions(o.d_model()).eps(o.layer_norm_eps()).bias(o.bias()).dtype(o.dtype());
  norm1 = register_module("norm1", LayerNorm(ln));
  norm2 = register_module("norm2", LayerNorm(ln));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

Tensor TransformerEncoderLayerImpl::activation(const Tensor& x) const {
  return options.activation() == "relu" ? relu(x) : gelu(x);
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask_, const Tensor& kpm_, bool is_causal) {
  Tensor kpm = canonical_mask(kpm_, "src_key_padding_mask", src.dtype());
  Tensor src_mask = canonical_mask(src_mask_, "src_mask", src.dtype());
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, kpm, false, src_mask, true, is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    return dropout2(linear2->forward(dropout(activation(linear1->forward(x)))));
  };
  Tensor x = src;
  if (options.norm_first()) {
    x = x + sa(norm1->forward(x));
    x = x + ff(norm2->forward(x));
  } else {
    x = norm1->forward(x + sa(x));
    x = norm2->forward(x + ff(x));
  }
  return x;
}

// ---- encoder

TransformerEncoderImpl::TransformerEncoderImpl(const TransformerEncoderLayerOptions& layer, int64_t n, bool final_norm)
    : num_layers(n) {
  KINDLE_CHECK_VALUE(n > 0, "TransformerEncoder: num_layers must be positive, got ", n);
  layers = register_module("layers", ModuleList());
  add_clones<TransformerEncoderLayer>(*layers, layer, n);
  if (final_norm) norm = register_module("norm", LayerNorm(final_norm_options(layer)));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask_, const Tensor& kpm_,
                                   std::optional<bool> is_causal) {
  Tensor kpm = canonical_mask(kpm_, "src_key_padding_mask", src.dtype());
  Tensor mask = canonical_mask(mask_, "mask", src.dtype());
  auto first = layers->ptr<TransformerEncoderLayerImpl>(0);
  bool causal = detect_causal(mask, is_causal, seq_len(src, first->options.batch_first()));
  Tensor out = src;
  for (auto& m : *layers) out = std::static_pointer_cast<TransformerEncoderLayerImpl>(m)->forward(out, mask, kpm, causal);
  if (norm) out = norm->forward(out);
  return out;
}

// ---- decoder layer

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerDecoderLayerOptions& o) : options(o) {
  KINDLE_CHECK(o.activation() == "relu" || o.activation() == "gelu", "activation should be relu/gelu, not ",
               o.activation());
  auto attn = MultiheadAttentionOptions(o.d_model(), o.nhead())
                  .dropout(o.dropout())
                  .bias(o.bias())
                  .batch_first(o.batch_first())
                  .dtype(o.dtype());
  // Construction order is Python's: the same seed draws the same weights.
  self_attn = register_module("self_attn", MultiheadAttention(attn));
  multihead_attn = register_module("multihead_attn", MultiheadAttention(attn));
  linear1 = register_module("linear1", Linear(LinearOptions(o.d_model(), o.dim_feedforward()).bias(o.bias()).dtype(o.dtype())));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(LinearOptions(o.dim_feedforward(), o.d_model()).bias(o.bias()).dtype(o.dtype())));
  norm1 = register_module("norm1", LayerNorm(final_norm_options(o)));
  norm2 = register_module("norm2", LayerNorm(final_norm_options(o)));
  norm3 = register_module("norm3", LayerNorm(final_norm_options(o)));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
}

Tensor TransformerDecoderLayerImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_kpm, const Tensor& memory_kpm,
                                            bool tgt_is_causal, bool memory_is_causal) {
  auto sa = [&](const Tensor& x) {
    return dropout1(std::get<0>(self_attn->forward(x, x, x, tgt_kpm, false, tgt_mask, true, tgt_is_causal)));
  };
  auto mha = [&](const Tensor& x) {
    return dropout2(
        std::get<0>(multihead_attn->forward(x, memory, memory, memory_kpm, false, memory_mask, true, memory_is_causal)));
  };
  auto ff = [&](const Tensor& x) {
    Tensor h = linear1->forward(x);
    return dropout3(linear2->forward(dropout(options.activation() == "relu" ? relu(h) : gelu(h))));
  };
  Tensor x = tgt;
  if (options.norm_first()) {
    x = x + sa(norm1->forward(x));
    x = x + mha(norm2->forward(x));
    x = x + ff(norm3->forward(x));
  } else {
    x = norm1->forward(x + sa(x));
    x = norm2->forward(x + mha(x));
    x = norm3->forward(x + ff(x));
  }
  return x;
}

// ---- decoder

TransformerDecoderImpl::TransformerDecoderImpl(const TransformerDecoderLayerOptions& layer, int64_t n, bool final_norm)
    : num_layers(n) {
  KINDLE_CHECK_VALUE(n > 0, "TransformerDecoder: num_layers must be positive, got ", n);
  layers = register_module("layers", ModuleList());
  add_clones<TransformerDecoderLayer>(*layers, layer, n);
  if (final_norm) norm = register_module("norm", LayerNorm(final_norm_options(layer)));
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_kpm, const Tensor& memory_kpm,
                                       std::optional<bool> tgt_is_causal, bool memory_is_causal) {
  auto first = layers->ptr<TransformerDecoderLayerImpl>(0);
  bool causal = detect_causal(tgt_mask, tgt_is_causal, seq_len(tgt, first->options.batch_first()));
  Tensor out = tgt;
  for (auto& m : *layers)
    out = std::static_pointer_cast<TransformerDecoderLayerImpl>(m)->forward(out, memory, tgt_mask, memory_mask, tgt_kpm,
                                                                           memory_kpm, causal, memory_is_causal);
  if (norm) out = norm->forward(out);
  return out;
}

// ---- Transformer

TransformerImpl::TransformerImpl(const TransformerOptions& o) : options(o) {
  auto layer = TransformerEncoderLayerOptions(o.d_model(), o.nhead())
                   .dim_feedforward(o.dim_feedforward())
                   .dropout(o.dropout())
                   .activation(o.activation())
                   .layer_norm_eps(o.layer_norm_eps())
                   .batch_first(o.batch_first())
                   .norm_first(o.norm_first())
                   .bias(o.bias())
                   .dtype(o.dtype());
  encoder = register_module("encoder", TransformerEncoder(layer, o.num_encoder_layers(), true));
  decoder = register_module("decoder", TransformerDecoder(layer, o.num_decoder_layers(), true));
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_kpm, const Tensor& tgt_kpm,
                                const Tensor& memory_kpm) {
  const int64_t batch_dim = options.batch_first() ? 0 : 1;
  KINDLE_CHECK(src.dim() != 3 || src.size(batch_dim) == tgt.size(batch_dim),
               "the batch number of src and tgt must be equal");
  KINDLE_CHECK(src.size(-1) == options.d_model() && tgt.size(-1) == options.d_model(),
               "the feature number of src and tgt must be equal to d_model");
  Tensor memory = encoder->forward(src, src_mask, src_kpm);
  return decoder->forward(tgt, memory, tgt_mask, memory_mask, tgt_kpm, memory_kpm);
}

}  // namespace kindle::nn
