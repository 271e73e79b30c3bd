// The adaptive log-softmax (Grave et al. 2016, torch.nn.AdaptiveLogSoftmaxWithLoss), once for both
// front ends: a head over the shortlist and one slot per cluster, each cluster a two-layer
// projection (tail_weights holds them in order: cluster 0's two weights, cluster 1's, ...);
// cutoffs ends with n_classes. The modules keep the weights; these ops are the whole computation.
#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/operators.h"
#include "kindle/ops.h"

namespace kindle {

namespace {

struct Asm {
  const Tensor& head_weight;
  const std::optional<Tensor>& head_bias;
  TensorList tails;
  IntArrayRef cutoffs;
  int64_t clusters() const { return int64_t(cutoffs.size()) - 1; }
  int64_t shortlist() const { return cutoffs[0]; }
  Tensor head(const Tensor& x) const { return linear(x, head_weight, head_bias); }
  Tensor tail(int64_t i, const Tensor& x) const {
    return linear(linear(x, tails[size_t(2 * i)]), tails[size_t(2 * i + 1)]);
  }
  void check(const char* op) const {
    KINDLE_CHECK(!cutoffs.empty() && int64_t(tails.size()) == 2 * clusters(), op, ": expected ", 2 * clusters(),
                 " tail weights for ", clusters(), " clusters, got ", tails.size());
  }
  // Log-probabilities of every class for 2-D x.
  Tensor full_log_prob(const Tensor& x, const Tensor& head_output) const {
    Tensor head_logp = log_softmax(head_output, 1);
    std::vector<Tensor> parts{slice(head_logp, 1, 0, shortlist())};
    for (int64_t i = 0; i < clusters(); ++i)
      parts.push_back(log_softmax(tail(i, x), 1) + slice(head_logp, 1, shortlist() + i, shortlist() + i + 1));
    return cat(parts, 1);
  }
};

}  // namespace

std::tuple<Tensor, Tensor> adaptive_log_softmax_with_loss(const Tensor& input, const Tensor& target,
                                                          const Tensor& head_weight,
                                                          const std::optional<Tensor>& head_bias,
                                                          TensorList tail_weights, IntArrayRef cutoffs) {
  const Asm m{head_weight, head_bias, tail_weights, cutoffs};
  m.check("adaptive_log_softmax_with_loss");
  if (target.dim() == 1) {
    KINDLE_CHECK(input.dim() == 0 || input.size(0) == target.size(0),
                 "Input and target should have the same size in the batch dimension.");
    KINDLE_CHECK(input.dim() == 2, "1D target tensor expects 2D input tensors, but found inputs with size ",
                 input.sizes());
  } else {
    KINDLE_CHECK(target.dim() == 0, "0D or 1D target tensor expected, multi-target not supported");
    KINDLE_CHECK(input.dim() == 1, "0D target tensor expects 1D input tensors, but found inputs with size ",
                 input.sizes());
  }
  const bool batched = target.dim() > 0;
  Tensor x = batched ? input : input.unsqueeze(0);
  Tensor t = batched ? target : target.unsqueeze(0);
  const int64_t n = t.size(0), n_classes = cutoffs.back();
  if (n) {
    const int64_t lo = t.min().item<int64_t>(), hi = t.max().item<int64_t>();
    KINDLE_CHECK(lo >= 0 && hi < n_classes, "Target values should be in [0, ", n_classes - 1,
                 "], but values in range [", lo, ", ", hi, "] were found. ");
  }
  // The head's entry for each row: the word itself, or its cluster's slot.
  Tensor head_index = t.to(kInt64);
  Tensor within = zeros({n}, TensorOptions(x.dtype()).device(x.device()));
  for (int64_t i = 0; i < m.clusters(); ++i) {
    const int64_t lo = cutoffs[size_t(i)], hi = cutoffs[size_t(i + 1)];
    Tensor rows = ((t >= lo).logical_and(t < hi)).nonzero().reshape({-1});
    if (rows.numel() == 0) continue;
    head_index = head_index.index_fill(0, rows, m.shortlist() + i);
    Tensor logp = log_softmax(m.tail(i, x.index_select(0, rows)), 1);
    Tensor picked = logp.gather(1, (t.index_select(0, rows).to(kInt64) - lo).unsqueeze(1)).squeeze(IntArrayRef{1});
    within = within.index_copy(0, rows, picked);
  }
  Tensor head_logp = log_softmax(m.head(x), 1);
  Tensor output = within + head_logp.gather(1, head_index.unsqueeze(1)).squeeze(IntArrayRef{1});
  Tensor loss = (-output).mean();
  return {batched ? output : output.squeeze(IntArrayRef{0}), loss};
}

Tensor adaptive_log_softmax_log_prob(const Tensor& input, const Tensor& head_weight,
                                     const std::optional<Tensor>& head_bias, TensorList tail_weights,
                                     IntArrayRef cutoffs) {
  const Asm m{head_weight, head_bias, tail_weights, cutoffs};
  m.check("adaptive_log_softmax_log_prob");
  Tensor x = input.dim() == 2 ? input : input.unsqueeze(0);
  Tensor out = m.full_log_prob(x, m.head(x));
  return input.dim() == 2 ? out : out.squeeze(IntArrayRef{0});
}

// The most likely class per row; the tails are evaluated only for rows whose head's best entry is
// a cluster (the result is log_prob's argmax).
Tensor adaptive_log_softmax_predict(const Tensor& input, const Tensor& head_weight,
                                    const std::optional<Tensor>& head_bias, TensorList tail_weights,
                                    IntArrayRef cutoffs) {
  const Asm m{head_weight, head_bias, tail_weights, cutoffs};
  m.check("adaptive_log_softmax_predict");
  Tensor x = input.dim() == 2 ? input : input.unsqueeze(0);
  Tensor head_output = m.head(x);
  Tensor best = head_output.argmax(1);
  Tensor rows = (best >= m.shortlist()).nonzero().reshape({-1});
  if (rows.numel()) {
    Tensor full = m.full_log_prob(x.index_select(0, rows), head_output.index_select(0, rows));
    best = best.index_copy(0, rows, full.argmax(1));
  }
  return input.dim() == 2 ? best : best.squeeze(IntArrayRef{0});
}

}  // namespace kindle
