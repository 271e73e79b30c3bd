// The CTC loss (Graves et al. 2006), once for both front ends: the forward (alpha) recursion in
// log space over the blank-extended targets, vectorised over the batch and the target positions,
// one step per time frame. The gradient is PyTorch's: with respect to log_probs it is
// exp(log_probs) minus the alignment occupancy (the gradient through a log_softmax that produced
// them, as PyTorch's kernel returns), the occupancy from the alpha and beta recursions.
#include <limits>

#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/operators.h"
#include "kindle/ops.h"
#include "autograd/formulas.h"

namespace kindle {

namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

TensorOptions like(const Tensor& t, DType d) { return TensorOptions(d).device(t.device()); }

// log(e^a + e^b + e^c) elementwise, -inf where all are -inf, with finite gradients there.
Tensor logsumexp3(const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor m = maximum(maximum(a, b), c);
  Tensor finite = m != kNegInf;
  Tensor m0 = where(finite, m, zeros_like(m, like(m, m.dtype())));
  Tensor s = (a - m0).exp() + (b - m0).exp() + (c - m0).exp();
  s = where(finite, s, ones_like(s, like(s, s.dtype())));
  return where(finite, m0 + s.log(), full_like(m, kNegInf, like(m, m.dtype())));
}

// The lattice of the blank-extended targets (N, L = 2S + 1) of one batch: log_probs (T, N, C),
// targets (N, S) padded, int64 lengths.
struct Lattice {
  int64_t T, N, L;
  Tensor input_lengths, target_lengths;
  Tensor ext;    // the label at each position (blanks between and around the targets)
  Tensor skip;   // s may come from s - 2: a label different from the label two back
  Tensor pos, valid, neg, pad2;
  Tensor emit;   // (T, N, L): log p(ext[s] at time t)

  Lattice(const Tensor& log_probs, const Tensor& targets_, const Tensor& input_lengths_,
          const Tensor& target_lengths_, int64_t blank)
      : T(log_probs.size(0)), N(log_probs.size(1)), L(2 * targets_.size(1) + 1) {
    const int64_t S = targets_.size(1);
    input_lengths = input_lengths_.to(like(log_probs, kInt64));
    target_lengths = target_lengths_.to(like(log_probs, kInt64));
    const Tensor targets = targets_.to(like(log_probs, kInt64));
    ext = full({N, L}, blank, like(log_probs, kInt64));
    if (S) slice(ext, 1, 1, std::nullopt, 2).copy_(targets);
    skip = zeros({N, L}, like(log_probs, kBool));
    if (S > 1) slice(skip, 1, 3, std::nullopt, 2).copy_(slice(ext, 1, 3, std::nullopt, 2) != slice(ext, 1, 1, L - 2, 2));
    pos = arange(L, like(log_probs, kInt64)).unsqueeze(0);
    valid = pos < (target_lengths * 2 + 1).unsqueeze(1);  // each sample's positions
    neg = full({N, L}, kNegInf, like(log_probs, log_probs.dtype()));
    pad2 = full({N, 2}, kNegInf, like(log_probs, log_probs.dtype()));
    emit = log_probs.gather(2, ext.unsqueeze(0).expand({T, N, L}));
  }

  // The forward variables alpha[t] (log of the paths' mass ending at s at time t, its emission
  // included), every step into `alphas` when given; returns the per-sample negative log-likelihoods.
  Tensor nll(std::vector<Tensor>* alphas = nullptr) const {
    Tensor final = neg;
    if (T) {
      Tensor alpha = where(valid, where(pos < 2, emit.select(0, 0), neg), neg);
      if (alphas) alphas->push_back(alpha);
      final = where((input_lengths == 1).unsqueeze(1), alpha, neg);
      for (int64_t t = 1; t < T; ++t) {
        Tensor shifted = cat({pad2, alpha}, 1);
        Tensor a1 = slice(shifted, 1, 1, L + 1);
        Tensor a2 = where(skip, slice(shifted, 1, 0, L), neg);
        alpha = where(valid, logsumexp3(alpha, a1, a2) + emit.select(0, t), neg);
        if (alphas) alphas->push_back(alpha);
        final = where((input_lengths == t + 1).unsqueeze(1), alpha, final);
      }
    }
    Tensor last = (target_lengths * 2).unsqueeze(1);
    Tensor end1 = final.gather(1, last).squeeze(IntArrayRef{1});
    Tensor end2 = final.gather(1, clamp_min(last - 1, 0)).squeeze(IntArrayRef{1});
    Tensor none = full_like(end2, kNegInf, like(end2, end2.dtype()));
    end2 = where(target_lengths > 0, end2, none);
    return -logsumexp3(end1, end2, none);
  }

  // The backward variables beta[t] (the paths' mass from s at time t to the end of each sample's
  // input, its emission included), every step, in time order.
  std::vector<Tensor> betas() const {
    std::vector<Tensor> out(static_cast<size_t>(T));
    // s may continue to s + 2 where s + 2 may come from s
    Tensor skip_next = cat({slice(skip, 1, 2, L), zeros({N, 2}, like(skip, kBool))}, 1);
    Tensor ends = valid.logical_and((pos == (target_lengths * 2).unsqueeze(1)).logical_or(
        pos == (target_lengths * 2 - 1).unsqueeze(1)));
    Tensor last_step = (input_lengths - 1).unsqueeze(1);
    Tensor beta = neg;
    for (int64_t t = T - 1; t >= 0; --t) {
      Tensor e = emit.select(0, t);
      Tensor rec = neg;
      if (t + 1 < T) {
        Tensor shifted = cat({beta, pad2}, 1);
        Tensor b1 = slice(shifted, 1, 1, L + 1);
        Tensor b2 = where(skip_next, slice(shifted, 1, 2, L + 2), neg);
        rec = where(valid, logsumexp3(beta, b1, b2) + e, neg);
      }
      beta = where(last_step == t, where(ends, e, neg), where(last_step > t, rec, neg));
      out[size_t(t)] = beta;
    }
    return out;
  }
};

}  // namespace

Tensor native__ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                        const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  autograd::NoGradGuard no_grad;
  Tensor nll = Lattice(log_probs, targets, input_lengths, target_lengths, blank).nll();
  return zero_infinity ? where(nll == std::numeric_limits<double>::infinity(), zeros_like(nll, like(nll, nll.dtype())), nll)
                       : nll;
}

namespace autograd {
Tensor _ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                          const Tensor& input_lengths, const Tensor& target_lengths, int64_t blank,
                          bool zero_infinity) {
  // alpha-beta: the posterior of each lattice position at each step, summed per class, is the
  // occupancy (no autograd graph of the recursion is built).
  autograd::NoGradGuard no_grad;
  const Lattice lat(log_probs, targets, input_lengths, target_lengths, blank);
  std::vector<Tensor> alphas;
  const Tensor nll = lat.nll(&alphas);
  Tensor occupancy = zeros_like(log_probs, like(log_probs, log_probs.dtype()));
  if (lat.T) {
    Tensor post = (stack(alphas, 0) + stack(lat.betas(), 0) - lat.emit + nll.reshape({1, -1, 1})).exp();
    occupancy = occupancy.scatter_add(2, lat.ext.unsqueeze(0).expand({lat.T, lat.N, lat.L}), post);
  }
  occupancy = -occupancy * grad.reshape({1, -1, 1});
  const int64_t T = log_probs.size(0);
  Tensor in_time = (arange(T, like(log_probs, kInt64)).unsqueeze(1) <
                    input_lengths.to(like(log_probs, kInt64)).unsqueeze(0)).unsqueeze(2);  // (T, N, 1)
  Tensor out = log_probs.exp() * grad.reshape({1, -1, 1}) + occupancy;
  Tensor zero = zeros_like(out, like(out, out.dtype()));
  out = where(in_time, out, zero);
  Tensor infinite = (nll == std::numeric_limits<double>::infinity()).reshape({1, -1, 1});
  if (zero_infinity) return where(infinite, zero, out);
  // the gradient of an infinite loss is undefined: NaN over the sample's frames, as PyTorch's
  return where(logical_and(infinite, in_time), full_like(out, std::numeric_limits<double>::quiet_NaN(),
                                                        like(out, out.dtype())), out);
}
}  // namespace autograd

Tensor ctc_loss(const Tensor& log_probs_, const Tensor& targets_, const Tensor& input_lengths_,
                const Tensor& target_lengths_, int64_t blank, std::string_view reduction, bool zero_infinity) {
  KINDLE_CHECK_VALUE(reduction == "none" || reduction == "mean" || reduction == "sum", reduction,
                     " is not a valid value for reduction");
  KINDLE_CHECK(log_probs_.is_floating_point(), "ctc_loss: expected log_probs to be a floating point tensor, got ",
               log_probs_.dtype());
  const bool unbatched = log_probs_.dim() == 2;
  Tensor log_probs = unbatched ? log_probs_.unsqueeze(1) : log_probs_;
  Tensor targets = unbatched && targets_.dim() == 1 ? targets_.unsqueeze(0) : targets_;
  KINDLE_CHECK(log_probs.dim() == 3, "ctc_loss: expected log_probs to be a 2-D or 3-D tensor (T, N, C), got ",
               log_probs_.sizes());
  const int64_t T = log_probs.size(0), N = log_probs.size(1), C = log_probs.size(2);
  KINDLE_CHECK(0 <= blank && blank < C, "ctc_loss: blank must be in label range, got blank=", blank, " for ", C,
               " classes");
  auto lengths = [&](const Tensor& x, const char* name) {
    Tensor t = x.to(kInt64).reshape({-1});
    KINDLE_CHECK(t.numel() == N, "ctc_loss: expected ", name, " to have one entry per batch element (", N, "), got ",
                 t.numel());
    return t;
  };
  Tensor il = lengths(input_lengths_, "input_lengths"), tl = lengths(target_lengths_, "target_lengths");
  KINDLE_CHECK(!targets.is_floating_point(), "ctc_loss: expected targets to be an integer tensor, got ",
               targets.dtype());
  if (N) {
    const int64_t il_max = il.max().item<int64_t>();
    KINDLE_CHECK(il_max <= T && il.min().item<int64_t>() >= 0, "ctc_loss: Expected input_lengths to have value at "
                 "most ", T, ", but got value ", il_max);
    KINDLE_CHECK(tl.min().item<int64_t>() >= 0, "ctc_loss: target_lengths must be non-negative");
  }
  if (targets.dim() == 1) {  // concatenated targets: pad them to (N, max target length)
    const int64_t total = N ? tl.sum().item<int64_t>() : 0;
    KINDLE_CHECK(total == targets.numel(), "ctc_loss: the sum of target_lengths (", total,
                 ") must equal the number of targets (", targets.numel(), ")");
    const int64_t smax = N ? tl.max().item<int64_t>() : 0;
    Tensor padded = full({N, smax}, blank, like(targets, kInt64));
    for (int64_t b = 0, start = 0; b < N; ++b) {
      const int64_t n = tl.select(0, b).item<int64_t>();
      slice(padded.select(0, b), 0, 0, n).copy_(slice(targets, 0, start, start + n));
      start += n;
    }
    targets = padded;
  } else {
    KINDLE_CHECK(targets.dim() == 2 && targets.size(0) == N, "ctc_loss: expected targets of shape (N, S) with N=", N,
                 ", got ", targets.sizes());
    if (N) {
      const int64_t tl_max = tl.max().item<int64_t>();
      KINDLE_CHECK(tl_max <= targets.size(1), "ctc_loss: Expected tensor to have size at least ", tl_max,
                   " at dimension 1, but got size ", targets.size(1), " for argument #2 'targets'");
    }
    targets = targets.to(kInt64);
  }
  Tensor losses = _ctc_loss(log_probs, targets, il, tl, blank, zero_infinity);
  if (reduction == "none") return unbatched ? losses.squeeze(IntArrayRef{0}) : losses;
  if (reduction == "sum") return losses.sum();
  return (losses / clamp_min(tl, 1).to(losses.dtype())).mean();
}

}  // namespace kindle
