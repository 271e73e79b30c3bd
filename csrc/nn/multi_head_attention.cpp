// multi_head_attention_forward: nn.MultiheadAttention's body, the one implementation under
// torch.nn.functional.multi_head_attention_forward (Python) and nn::MultiheadAttention (C++).
// Projections, head splitting and masks are arranged with ops; the attention itself is
// scaled_dot_product_attention unless the weights are asked for. The checks and their
// exception types (AssertionError for PyTorch's asserts) are PyTorch's.
#include <cmath>
#include <limits>

#include "nn/common.h"

namespace kindle {
namespace {

// Bool masks (true = masked out) become additive float masks (-inf where masked).
Tensor canonical_mask(const std::optional<Tensor>& mask, const char* name, DType target) {
  if (!mask || !mask->defined()) return Tensor();
  const Tensor& m = *mask;
  KINDLE_CHECK_ASSERT(m.dtype() == kBool || m.is_floating_point(), "only bool and floating types of ", name,
                      " are supported");
  if (m.is_floating_point()) return m;
  return zeros_like(m, target).masked_fill_(m, scalar_tensor_of(-std::numeric_limits<double>::infinity(), target));
}

// True for batched (3-D) inputs, false for unbatched (2-D).
bool shape_check(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& kpm, const Tensor& mask,
                 int64_t num_heads) {
  if (q.dim() == 3) {
    KINDLE_CHECK_ASSERT(k.dim() == 3 && v.dim() == 3,
                        "For batched (3-D) `query`, expected `key` and `value` to be 3-D but found ", k.dim(),
                        "-D and ", v.dim(), "-D tensors respectively");
    KINDLE_CHECK_ASSERT(!kpm.defined() || kpm.dim() == 2,
                        "For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but found ",
                        kpm.dim(), "-D tensor instead");
    KINDLE_CHECK_ASSERT(!mask.defined() || mask.dim() == 2 || mask.dim() == 3,
                        "For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found ",
                        mask.dim(), "-D tensor instead");
    return true;
  }
  KINDLE_CHECK_ASSERT(q.dim() == 2, "query should be unbatched 2D or batched 3D tensor but received ", q.dim(),
                      "-D query tensor");
  KINDLE_CHECK_ASSERT(k.dim() == 2 && v.dim() == 2,
                      "For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found ", k.dim(),
                      "-D and ", v.dim(), "-D tensors respectively");
  KINDLE_CHECK_ASSERT(!kpm.defined() || kpm.dim() == 1,
                      "For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but found ",
                      kpm.dim(), "-D tensor instead");
  if (mask.defined()) {
    KINDLE_CHECK_ASSERT(mask.dim() == 2 || mask.dim() == 3,
                        "For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found ",
                        mask.dim(), "-D tensor instead");
    KINDLE_CHECK_ASSERT(mask.dim() == 2 || (mask.size(0) == num_heads && mask.size(1) == q.size(0) &&
                                            mask.size(2) == k.size(0)),
                        "Expected `attn_mask` shape to be (", num_heads, ", ", q.size(0), ", ", k.size(0),
                        ") but got ", mask.sizes());
  }
  return false;
}

Tensor part(const std::optional<Tensor>& b, int64_t start, int64_t len) {
  return b && b->defined() ? b->narrow(0, start, len) : Tensor();
}
std::optional<Tensor> opt(const Tensor& t) { return t.defined() ? std::optional<Tensor>(t) : std::nullopt; }

// q, k, v projected by one packed (3E, E) weight: one GEMM when they are one tensor, two when
// key is value (the identities survive the front ends' transposes).
std::tuple<Tensor, Tensor, Tensor> in_projection_packed(const Tensor& q, const Tensor& k, const Tensor& v,
                                                        const Tensor& w, const std::optional<Tensor>& b) {
  const int64_t E = q.size(-1);
  if (q.is_same(k) && k.is_same(v)) {
    auto qkv = linear(q, w, b).chunk(3, -1);
    return {qkv[0], qkv[1], qkv[2]};
  }
  if (k.is_same(v)) {
    auto kv = linear(k, w.narrow(0, E, 2 * E), opt(part(b, E, 2 * E))).chunk(2, -1);
    return {linear(q, w.narrow(0, 0, E), opt(part(b, 0, E))), kv[0], kv[1]};
  }
  return {linear(q, w.narrow(0, 0, E), opt(part(b, 0, E))), linear(k, w.narrow(0, E, E), opt(part(b, E, E))),
          linear(v, w.narrow(0, 2 * E, E), opt(part(b, 2 * E, E)))};
}

Tensor check_static(const Tensor& t, int64_t rows, int64_t head_dim, const char* name) {
  KINDLE_CHECK_ASSERT(t.dim() == 3, "expecting ", name, " of 3 dimensions, but got ", t.sizes());
  KINDLE_CHECK_ASSERT(t.size(0) == rows, "expecting ", name, ".size(0) of ", rows, ", but got ", t.size(0));
  KINDLE_CHECK_ASSERT(t.size(2) == head_dim, "expecting ", name, ".size(2) of ", head_dim, ", but got ", t.size(2));
  return t;
}

}  // namespace

std::tuple<Tensor, Tensor> multi_head_attention_forward(
    const Tensor& query_in, const Tensor& key_in, const Tensor& value_in, int64_t embed_dim_to_check,
    int64_t num_heads, const std::optional<Tensor>& in_proj_weight, const std::optional<Tensor>& in_proj_bias,
    const std::optional<Tensor>& bias_k, const std::optional<Tensor>& bias_v, bool add_zero_attn, double dropout_p,
    const Tensor& out_proj_weight, const std::optional<Tensor>& out_proj_bias, bool training,
    const std::optional<Tensor>& key_padding_mask, bool need_weights, const std::optional<Tensor>& attn_mask_in,
    bool use_separate_proj_weight, const std::optional<Tensor>& q_proj_weight,
    const std::optional<Tensor>& k_proj_weight, const std::optional<Tensor>& v_proj_weight,
    const std::optional<Tensor>& static_k, const std::optional<Tensor>& static_v, bool average_attn_weights,
    bool is_causal) {
  Tensor query = query_in, key = key_in, value = value_in;
  Tensor kpm = key_padding_mask ? *key_padding_mask : Tensor();
  Tensor attn_mask = attn_mask_in ? *attn_mask_in : Tensor();
  const std::optional<Tensor> out_bias = out_proj_bias ? opt(*out_proj_bias) : std::nullopt;
  KINDLE_CHECK_ASSERT(num_heads > 0, "num_heads must be greater than 0, got ", num_heads);
  const bool batched = shape_check(query, key, value, kpm, attn_mask, num_heads);
  if (!batched) {
    const bool kv_same = key.is_same(value), qk_same = query.is_same(key);
    query = query.unsqueeze(1);
    key = qk_same ? query : key.unsqueeze(1);
    value = kv_same ? key : value.unsqueeze(1);
    if (kpm.defined()) kpm = kpm.unsqueeze(0);
  }
  const int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2);
  int64_t src_len = key.size(0);

  kpm = canonical_mask(opt(kpm), "key_padding_mask", query.dtype());
  KINDLE_CHECK(!is_causal || attn_mask.defined(),
               "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
               "`generate_square_subsequent_mask` to create this mask.");
  if (is_causal && !kpm.defined() && !need_weights) {
    attn_mask = Tensor();  // the causal hint alone drives scaled_dot_product_attention
  } else {
    attn_mask = canonical_mask(opt(attn_mask), "attn_mask", query.dtype());
    if (kpm.defined()) is_causal = false;
  }

  KINDLE_CHECK_ASSERT(embed_dim == embed_dim_to_check, "was expecting embedding dimension of ", embed_dim_to_check,
                      ", but got ", embed_dim);
  const int64_t head_dim = embed_dim / num_heads;
  KINDLE_CHECK_ASSERT(head_dim * num_heads == embed_dim, "embed_dim ", embed_dim, " not divisible by num_heads ",
                      num_heads);
  Tensor q, k, v;
  if (use_separate_proj_weight) {
    KINDLE_CHECK_ASSERT(key.size(0) == value.size(0) && key.size(1) == value.size(1),
                        "key's sequence and batch dims (", key.size(0), ", ", key.size(1),
                        ") do not match value's (", value.size(0), ", ", value.size(1), ")");
    KINDLE_CHECK_ASSERT(q_proj_weight && k_proj_weight && v_proj_weight && q_proj_weight->defined() &&
                            k_proj_weight->defined() && v_proj_weight->defined(),
                        "use_separate_proj_weight is True but q_proj_weight, k_proj_weight or v_proj_weight is "
                        "None");
    const Tensor* ws[3] = {&*q_proj_weight, &*k_proj_weight, &*v_proj_weight};
    const Tensor* xs[3] = {&query, &key, &value};
    const char* names[3] = {"query", "key", "value"};
    Tensor outs[3];
    for (int i = 0; i < 3; ++i) {
      const Tensor& w = *ws[i];
      KINDLE_CHECK_ASSERT(w.dim() == 2 && w.size(0) == embed_dim && w.size(1) == xs[i]->size(-1), "expecting ",
                          names[i], " weights shape of (", embed_dim, ", ", xs[i]->size(-1), "), but got ",
                          w.sizes());
      outs[i] = linear(*xs[i], w, opt(part(in_proj_bias, i * embed_dim, embed_dim)));
    }
    q = outs[0], k = outs[1], v = outs[2];
  } else {
    KINDLE_CHECK_ASSERT(key.sizes() == value.sizes(), "key shape ", key.sizes(), " does not match value shape ",
                        value.sizes());
    KINDLE_CHECK_ASSERT(in_proj_weight && in_proj_weight->defined(),
                        "use_separate_proj_weight is False but in_proj_weight is None");
    std::tie(q, k, v) = in_projection_packed(query, key, value, *in_proj_weight, in_proj_bias);
  }

  if (attn_mask.defined()) {
    if (attn_mask.dim() == 2) {
      KINDLE_CHECK(attn_mask.size(0) == tgt_len && attn_mask.size(1) == src_len, "The shape of the 2D attn_mask is ",
                   attn_mask.sizes(), ", but should be (", tgt_len, ", ", src_len, ").");
      attn_mask = attn_mask.unsqueeze(0);
    } else if (attn_mask.dim() == 3) {
      KINDLE_CHECK(attn_mask.size(0) == bsz * num_heads && attn_mask.size(1) == tgt_len &&
                       attn_mask.size(2) == src_len,
                   "The shape of the 3D attn_mask is ", attn_mask.sizes(), ", but should be (", bsz * num_heads,
                   ", ", tgt_len, ", ", src_len, ").");
    } else {
      KINDLE_ERROR("attn_mask's dimension ", attn_mask.dim(), " is not supported");
    }
  }

  const bool has_bias_k = bias_k && bias_k->defined(), has_bias_v = bias_v && bias_v->defined();
  if (has_bias_k && has_bias_v) {
    KINDLE_CHECK_ASSERT(!static_k && !static_v, "bias cannot be added to static key or value.");
    k = cat({k, bias_k->repeat({1, bsz, 1})});
    v = cat({v, bias_v->repeat({1, bsz, 1})});
    if (attn_mask.defined()) attn_mask = pad(attn_mask, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
  } else {
    KINDLE_CHECK_ASSERT(!has_bias_k && !has_bias_v, "bias_k and bias_v must both be set or both be None");
  }

  // The (L, N, E) projections as (N, heads, L, head_dim) views, for scaled_dot_product_attention,
  // which reads such strided heads in place: the reshapes below copy them (their N and heads dims
  // do not merge).
  const bool views = !need_weights && !(static_k && static_k->defined()) && !(static_v && static_v->defined()) &&
                     !add_zero_attn;
  const Tensor q4 = views ? q.reshape({tgt_len, bsz, num_heads, head_dim}).permute({1, 2, 0, 3}) : Tensor();
  const Tensor k4 = views ? k.reshape({k.size(0), bsz, num_heads, head_dim}).permute({1, 2, 0, 3}) : Tensor();
  const Tensor v4 = views ? v.reshape({v.size(0), bsz, num_heads, head_dim}).permute({1, 2, 0, 3}) : Tensor();
  // (L, N, E) -> (N * heads, L, head_dim)
  const int64_t rows = bsz * num_heads;
  if (!views) {
    q = q.reshape({tgt_len, rows, head_dim}).transpose(0, 1);
    k = static_k && static_k->defined() ? check_static(*static_k, rows, head_dim, "static_k")
                                        : k.reshape({k.size(0), rows, head_dim}).transpose(0, 1);
    v = static_v && static_v->defined() ? check_static(*static_v, rows, head_dim, "static_v")
                                        : v.reshape({v.size(0), rows, head_dim}).transpose(0, 1);
  }
  if (add_zero_attn) {
    Tensor z = zeros({rows, 1, head_dim}, k.dtype(), k.device());
    k = cat({k, z}, 1);
    v = cat({v, z}, 1);
    if (attn_mask.defined()) attn_mask = pad(attn_mask, {0, 1});
    if (kpm.defined()) kpm = pad(kpm, {0, 1});
  }
  src_len = views ? k.size(0) : k.size(1);

  if (kpm.defined()) {
    KINDLE_CHECK_ASSERT(kpm.size(0) == bsz, "Expected key_padded_mask.shape[0] to be ", bsz, ", but got ",
                        kpm.size(0));
    KINDLE_CHECK_ASSERT(kpm.size(1) == src_len, "Expected key_padded_mask.shape[1] to be ", src_len, ", but got ",
                        kpm.size(1));
    kpm = kpm.reshape({bsz, 1, 1, src_len}).expand({-1, num_heads, -1, -1}).reshape({rows, 1, src_len});
    attn_mask = attn_mask.defined() ? attn_mask + kpm : kpm;
  }
  if (!training) dropout_p = 0.0;

  if (need_weights) {
    // The explicit path: the weights are a result, so they are materialised.
    Tensor q_scaled = q * std::sqrt(1.0 / double(head_dim));
    Tensor weights = attn_mask.defined() ? baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
                                         : bmm(q_scaled, k.transpose(-2, -1));
    weights = softmax(weights, -1);
    if (dropout_p > 0.0) weights = dropout(weights, dropout_p, true);
    Tensor out = bmm(weights, v).transpose(0, 1).reshape({tgt_len * bsz, embed_dim});
    out = linear(out, out_proj_weight, out_bias).reshape({tgt_len, bsz, -1});
    weights = weights.reshape({bsz, num_heads, tgt_len, src_len});
    if (average_attn_weights) weights = weights.mean(IntArrayRef{1});
    if (!batched) {
      out = out.squeeze(IntArrayRef{1});
      weights = weights.squeeze(IntArrayRef{0});
    }
    return {out, weights};
  }

  if (attn_mask.defined()) {
    if (attn_mask.size(0) == 1 && attn_mask.dim() == 3) attn_mask = attn_mask.unsqueeze(0);
    else attn_mask = attn_mask.reshape({bsz, num_heads, -1, src_len});
  }
  if (views) {
    q = q4, k = k4, v = v4;
  } else {
    q = q.reshape({bsz, num_heads, tgt_len, head_dim});
    k = k.reshape({bsz, num_heads, src_len, head_dim});
    v = v.reshape({bsz, num_heads, src_len, head_dim});
  }
  Tensor out = scaled_dot_product_attention(q, k, v, opt(attn_mask), dropout_p, is_causal);
  if (out.transpose(1, 2).is_contiguous()) {
    // Laid out (N, L, heads, head_dim) (the queries were): project it as (N * L, E) rows in place
    // and return the (L, N, E) view of the (N, L, E) result.
    out = linear(out.transpose(1, 2).reshape({bsz * tgt_len, embed_dim}), out_proj_weight, out_bias);
    out = out.reshape({bsz, tgt_len, -1}).transpose(0, 1);
  } else {
    out = out.permute({2, 0, 1, 3}).reshape({bsz * tgt_len, embed_dim});
    out = linear(out, out_proj_weight, out_bias).reshape({tgt_len, bsz, -1});
  }
  if (!batched) out = out.squeeze(IntArrayRef{1});
  return {out, Tensor()};
}

}  // namespace kindle
