// MultiheadAttention (multi_head_attention_forward) and the Transformer encoder, ported from
// python/kindle/nn/modules/attention.py and transformer.py: projections, head splitting and
// masks arranged with kindle ops; attention itself is scaled_dot_product_attention unless the
// weights are asked for.
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

bool mha_shape_check(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& kpm, const Tensor& mask,
                     int64_t num_heads) {
  if (q.dim() == 3) {
    KINDLE_CHECK(k.dim() == 3 && v.dim() == 3,
                 "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found ", k.dim(), "-D and ",
                 v.dim(), "-D tensors respectively");
    KINDLE_CHECK(!kpm.defined() || kpm.dim() == 2,
                 "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found ", kpm.dim(),
                 "-D tensor instead");
    KINDLE_CHECK(!mask.defined() || mask.dim() == 2 || mask.dim() == 3,
                 "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found ", mask.dim(),
                 "-D tensor instead");
    return true;
  }
  KINDLE_CHECK(q.dim() == 2, "query should be unbatched 2D or batched 3D tensor but received ", q.dim(),
               "-D query tensor");
  KINDLE_CHECK(k.dim() == 2 && v.dim() == 2,
               "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found ", k.dim(), "-D and ",
               v.dim(), "-D tensors respectively");
  KINDLE_CHECK(!kpm.defined() || kpm.dim() == 1,
               "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found ", kpm.dim(),
               "-D tensor instead");
  if (mask.defined()) {
    KINDLE_CHECK(mask.dim() == 2 || mask.dim() == 3,
                 "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found ", mask.dim(),
                 "-D tensor instead");
    if (mask.dim() == 3)
      KINDLE_CHECK(mask.size(0) == num_heads && mask.size(1) == q.size(0) && mask.size(2) == k.size(0),
                   "Expected `attn_mask` shape to be (", num_heads, ", ", q.size(0), ", ", k.size(0), ") but got ",
                   mask.sizes());
  }
  return false;
}

Tensor bias_part(const Tensor& b, int64_t start, int64_t len) { return b.defined() ? b.narrow(0, start, len) : b; }

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
                                                       const Tensor& attn_mask_, bool average_attn_weights,
                                                       bool is_causal) {
  const auto& o = options;
  Tensor query = query_, key = key_, value = value_;
  bool batched_input = query.dim() == 3;
  Tensor kpm = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype());
  Tensor attn_mask = canonical_mask(attn_mask_, "attn_mask", query.dtype());
  if (o.batch_first() && batched_input) {
    // Keep the identities (q is k is v) that let the projection run as one GEMM.
    bool kv_same = key.is_same(value), qk_same = query.is_same(key);
    query = query.transpose(1, 0);
    key = qk_same ? query : key.transpose(1, 0);
    value = kv_same ? key : value.transpose(1, 0);
  }

  // ---- multi_head_attention_forward
  int64_t heads = o.num_heads();
  bool batched = mha_shape_check(query, key, value, kpm, attn_mask, heads);
  if (!batched) {
    bool kv_same = key.is_same(value), qk_same = query.is_same(key);
    query = query.unsqueeze(1);
    key = qk_same ? query : key.unsqueeze(1);
    value = kv_same ? key : value.unsqueeze(1);
    if (kpm.defined()) kpm = kpm.unsqueeze(0);
  }
  int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2);
  int64_t src_len = key.size(0);
  if (is_causal && !attn_mask.defined())
    throw Error("Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
                "`generate_square_subsequent_mask` to create this mask.");
  if (is_causal && !kpm.defined() && !need_weights) attn_mask = Tensor();  // the hint alone drives the kernel
  else if (kpm.defined()) is_causal = false;
  KINDLE_CHECK(embed_dim == o.embed_dim(), "was expecting embedding dimension of ", o.embed_dim(), ", but got ",
               embed_dim);
  int64_t E = embed_dim;
  Tensor q, k, v;
  if (!in_proj_weight.defined()) {
    KINDLE_CHECK(key.size(0) == value.size(0) && key.size(1) == value.size(1), "key's sequence and batch dims (",
                 key.size(0), ", ", key.size(1), ") do not match value's (", value.size(0), ", ", value.size(1), ")");
    q = linear(query, q_proj_weight, opt(bias_part(in_proj_bias, 0, E)));
    k = linear(key, k_proj_weight, opt(bias_part(in_proj_bias, E, E)));
    v = linear(value, v_proj_weight, opt(bias_part(in_proj_bias, 2 * E, E)));
  } else {
    KINDLE_CHECK(key.sizes() == value.sizes(), "key shape ", key.sizes(), " does not match value shape ",
                 value.sizes());
    if (query.is_same(key) && key.is_same(value)) {
      auto qkv = linear(query, in_proj_weight, opt(in_proj_bias)).chunk(3, -1);
      q = qkv[0], k = qkv[1], v = qkv[2];
    } else if (key.is_same(value)) {
      q = linear(query, in_proj_weight.narrow(0, 0, E), opt(bias_part(in_proj_bias, 0, E)));
      auto kv = linear(key, in_proj_weight.narrow(0, E, 2 * E), opt(bias_part(in_proj_bias, E, 2 * E))).chunk(2, -1);
      k = kv[0], v = kv[1];
    } else {
      q = linear(query, in_proj_weight.narrow(0, 0, E), opt(bias_part(in_proj_bias, 0, E)));
      k = linear(key, in_proj_weight.narrow(0, E, E), opt(bias_part(in_proj_bias, E, E)));
      v = linear(value, in_proj_weight.narrow(0, 2 * E, E), opt(bias_part(in_proj_bias, 2 * E, E)));
    }
  }
  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      KINDLE_CHECK(attn_mask.size(0) == tgt_len && attn_mask.size(1) == src_len, "The shape of the 2D attn_mask is ",
                   attn_mask.sizes(), ", but should be (", tgt_len, ", ", src_len, ").");
      attn_mask = attn_mask.unsqueeze(0);
    } else {
      KINDLE_CHECK(attn_mask.size(0) == bsz * heads && attn_mask.size(1) == tgt_len && attn_mask.size(2) == src_len,
                   "The shape of the 3D attn_mask is ", attn_mask.sizes(), ", but should be (", bsz * heads, ", ",
                   tgt_len, ", ", src_len, ").");
    }
  }
  if (bias_k.defined()) {
    k = cat({k, bias_k.repeat({1, bsz, 1})});
    v = cat({v, bias_v.repeat({1, bsz, 1})});
    if (attn_mask.defined()) attn_mask = pad(attn_mask, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
  }
  // (L, N, E) -> (N * heads, L, head_dim)
  q = q.reshape({tgt_len, bsz * heads, head_dim}).transpose(0, 1);
  k = k.reshape({k.size(0), bsz * heads, head_dim}).transpose(0, 1);
  v = v.reshape({v.size(0), bsz * heads, head_dim}).transpose(0, 1);
  if (o.add_zero_attn()) {
    Tensor z = zeros({bsz * heads, 1, head_dim}, k.dtype());
    k = cat({k, z}, 1);
    v = cat({v, z}, 1);
    if (attn_mask.defined()) attn_mask = pad(attn_mask, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
  }
  src_len = k.size(1);
  if (kpm.defined()) {
    KINDLE_CHECK(kpm.size(0) == bsz, "Expected key_padded_mask.shape[0] to be ", bsz, ", but got ", kpm.size(0));
    KINDLE_CHECK(kpm.size(1) == src_len, "Expected key_padded_mask.shape[1] to be ", src_len, ", but got ",
                 kpm.size(1));
    kpm = kpm.reshape({bsz, 1, 1, src_len}).expand({-1, heads, -1, -1}).reshape({bsz * heads, 1, src_len});
    attn_mask = attn_mask.defined() ? attn_mask + kpm : kpm;
  }
  double dropout_p = is_training() ? o.dropout() : 0.0;

  Tensor out, weights;
  if (need_weights) {
    // The explicit path: the weights are a result, so they are materialised.
    Tensor q_scaled = q * std::sqrt(1.0 / double(head_dim));
    weights = attn_mask.defined() ? baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
                                  : bmm(q_scaled, k.transpose(-2, -1));
    weights = softmax(weights, -1);
    if (dropout_p > 0.0) weights = dropout(weights, dropout_p);
    out = bmm(weights, v).transpose(0, 1).reshape({tgt_len * bsz, embed_dim});
    out = linear(out, out_proj->weight, opt(out_proj->bias)).reshape({tgt_len, bsz, -1});
    weights = weights.reshape({bsz, heads, tgt_len, src_len});
    if (average_attn_weights) weights = weights.mean(std::vector<int64_t>{1});
    if (!batched) {
      out = out.squeeze(std::vector<int64_t>{1});
      weights = weights.squeeze(std::vector<int64_t>{0});
    }
  } else {
    if (attn_mask.defined()) {
      if (attn_mask.size(0) == 1 && attn_mask.dim() == 3) attn_mask = attn_mask.unsqueeze(0);
      else attn_mask = attn_mask.reshape({bsz, heads, -1, src_len});
    }
    q = q.reshape({bsz, heads, tgt_len, head_dim});
    k = k.reshape({bsz, heads, src_len, head_dim});
    v = v.reshape({bsz, heads, src_len, head_dim});
    out = scaled_dot_product_attention(q, k, v, opt(attn_mask), dropout_p, is_causal);
    out = out.permute({2, 0, 1, 3}).reshape({bsz * tgt_len, embed_dim});
    out = linear(out, out_proj->weight, opt(out_proj->bias)).reshape({tgt_len, bsz, -1});
    if (!batched) out = out.squeeze(std::vector<int64_t>{1});
  }
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
  TransformerEncoderLayer first(layer);
  StateDict weights = first->state_dict();
  // Python deep-copies one layer: the random stream advances once, and every copy starts from
  // the same weights. The copies here are built with the stream rewound, then given the weights.
  Generator& gen = default_generator();
  std::vector<uint8_t> state(GeneratorImpl::kStateBytes);
  gen->get_state(state.data());
  layers->push_back(std::move(first));
  for (int64_t i = 1; i < n; ++i) {
    TransformerEncoderLayer copy(layer);
    copy->load_state_dict(weights);
    gen->set_state(state.data(), state.size());
    layers->push_back(std::move(copy));
  }
  if (final_norm)
    norm = register_module("norm", LayerNorm(LayerNormOptions(layer.d_model()).eps(layer.layer_norm_eps())
                                                 .bias(layer.bias())
                                                 .dtype(layer.dtype())));
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& mask_, const Tensor& kpm_,
                                   std::optional<bool> is_causal) {
  Tensor kpm = canonical_mask(kpm_, "src_key_padding_mask", src.dtype());
  Tensor mask = canonical_mask(mask_, "mask", src.dtype());
  auto first = layers->ptr<TransformerEncoderLayerImpl>(0);
  bool causal = is_causal.value_or(false);
  if (!is_causal && mask.defined()) {
    int64_t seq = src.dim() == 2 ? src.size(0) : src.size(first->options.batch_first() ? 1 : 0);
    Tensor c = generate_square_subsequent_mask(seq, mask.dtype());
    causal = mask.sizes() == c.sizes() && equal(mask, c);
  }
  Tensor out = src;
  for (auto& m : *layers) out = std::static_pointer_cast<TransformerEncoderLayerImpl>(m)->forward(out, mask, kpm, causal);
  if (norm) out = norm->forward(out);
  return out;
}

}  // namespace kindle::nn
