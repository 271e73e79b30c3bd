// Loss modules: forward(input, target) over the C++ loss ops. Class weights are buffers named
// "weight" (and "pos_weight"), as in Python, so they follow to(dtype) and appear in state dicts.
//   nn::CrossEntropyLoss loss;  Tensor l = loss(logits, labels);
#pragma once
#include <functional>
#include <optional>

#include "kindle/nn/module.h"
#include "kindle/nn/options.h"

namespace kindle::nn {

// What every loss shares: the reduction ("none", "mean" or "sum") and the two-input call.
class Loss : public Module {
 public:
  explicit Loss(std::string reduction = "mean");
  virtual Tensor forward(const Tensor& input, const Tensor& target) = 0;
  Tensor operator()(const Tensor& input, const Tensor& target) { return forward(input, target); }
  std::string reduction;

 private:
  using Module::forward;
  using Module::operator();
};

class CrossEntropyLossImpl : public Loss {
 public:
  explicit CrossEntropyLossImpl(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  CrossEntropyLossOptions options;
  Tensor weight;
};
KINDLE_MODULE(CrossEntropyLoss);

class NLLLossImpl : public Loss {
 public:
  explicit NLLLossImpl(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  NLLLossOptions options;
  Tensor weight;
};
KINDLE_MODULE(NLLLoss);

class BCELossImpl : public Loss {
 public:
  explicit BCELossImpl(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCELossOptions options;
  Tensor weight;
};
KINDLE_MODULE(BCELoss);

class BCEWithLogitsLossImpl : public Loss {
 public:
  explicit BCEWithLogitsLossImpl(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};
KINDLE_MODULE(BCEWithLogitsLoss);

class MSELossImpl : public Loss {
 public:
  explicit MSELossImpl(const MSELossOptions& options = {}) : Loss(options.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};
KINDLE_MODULE(MSELoss);

class L1LossImpl : public Loss {
 public:
  explicit L1LossImpl(const L1LossOptions& options = {}) : Loss(options.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};
KINDLE_MODULE(L1Loss);

class SmoothL1LossImpl : public Loss {
 public:
  explicit SmoothL1LossImpl(const SmoothL1LossOptions& options = {}) : Loss(options.reduction()), beta(options.beta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double beta;
};
KINDLE_MODULE(SmoothL1Loss);

class HuberLossImpl : public Loss {
 public:
  explicit HuberLossImpl(const HuberLossOptions& options = {}) : Loss(options.reduction()), delta(options.delta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double delta;
};
KINDLE_MODULE(HuberLoss);

class KLDivLossImpl : public Loss {
 public:
  explicit KLDivLossImpl(const KLDivLossOptions& options = {})
      : Loss(options.reduction()), log_target(options.log_target()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  bool log_target;
};
KINDLE_MODULE(KLDivLoss);

// ---- the other losses of torch.nn, each over its core op

struct HingeEmbeddingLossOptions {
  KINDLE_ARG(double, margin) = 1.0;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class HingeEmbeddingLossImpl : public Loss {
 public:
  explicit HingeEmbeddingLossImpl(const HingeEmbeddingLossOptions& o = {}) : Loss(o.reduction()), margin(o.margin()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double margin;
};
KINDLE_MODULE(HingeEmbeddingLoss);

struct PoissonNLLLossOptions {
  KINDLE_ARG(bool, log_input) = true;
  KINDLE_ARG(bool, full) = false;
  KINDLE_ARG(double, eps) = 1e-8;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class PoissonNLLLossImpl : public Loss {
 public:
  explicit PoissonNLLLossImpl(const PoissonNLLLossOptions& o = {}) : Loss(o.reduction()), options(o) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  PoissonNLLLossOptions options;
};
KINDLE_MODULE(PoissonNLLLoss);

struct MultiMarginLossOptions {
  KINDLE_ARG(int64_t, p) = 1;
  KINDLE_ARG(double, margin) = 1.0;
  KINDLE_ARG(Tensor, weight);  // undefined: no class weights
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class MultiMarginLossImpl : public Loss {
 public:
  explicit MultiMarginLossImpl(const MultiMarginLossOptions& o = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  MultiMarginLossOptions options;
  Tensor weight;  // the buffer "weight", as Python's
};
KINDLE_MODULE(MultiMarginLoss);

struct MultiLabelMarginLossOptions {
  MultiLabelMarginLossOptions(EnumName reduction = "mean") : reduction_(std::move(reduction)) {}
  KINDLE_ARG(EnumName, reduction);
};
class MultiLabelMarginLossImpl : public Loss {
 public:
  explicit MultiLabelMarginLossImpl(const MultiLabelMarginLossOptions& o = {}) : Loss(o.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};
KINDLE_MODULE(MultiLabelMarginLoss);

// Losses of three tensors: forward(a, b, c).
struct MarginRankingLossOptions {
  KINDLE_ARG(double, margin) = 0.0;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class MarginRankingLossImpl : public Module {
 public:
  explicit MarginRankingLossImpl(const MarginRankingLossOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  KINDLE_MODULE_CALL
  MarginRankingLossOptions options;
};
KINDLE_MODULE(MarginRankingLoss);

using CosineEmbeddingLossOptions = MarginRankingLossOptions;  // margin (default 0) and reduction
class CosineEmbeddingLossImpl : public Module {
 public:
  explicit CosineEmbeddingLossImpl(const CosineEmbeddingLossOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& input1, const Tensor& input2, const Tensor& target);
  KINDLE_MODULE_CALL
  CosineEmbeddingLossOptions options;
};
KINDLE_MODULE(CosineEmbeddingLoss);

struct TripletMarginLossOptions {
  KINDLE_ARG(double, margin) = 1.0;
  KINDLE_ARG(double, p) = 2.0;
  KINDLE_ARG(double, eps) = 1e-6;
  KINDLE_ARG(bool, swap) = false;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class TripletMarginLossImpl : public Module {
 public:
  explicit TripletMarginLossImpl(const TripletMarginLossOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  KINDLE_MODULE_CALL
  TripletMarginLossOptions options;
};
KINDLE_MODULE(TripletMarginLoss);

struct GaussianNLLLossOptions {
  KINDLE_ARG(bool, full) = false;
  KINDLE_ARG(double, eps) = 1e-6;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class GaussianNLLLossImpl : public Module {
 public:
  explicit GaussianNLLLossImpl(const GaussianNLLLossOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& input, const Tensor& target, const Tensor& var);
  KINDLE_MODULE_CALL
  GaussianNLLLossOptions options;
};
KINDLE_MODULE(GaussianNLLLoss);

// Connectionist temporal classification: log_probs (T, N, C) (log_softmax outputs), targets
// (N, S) padded or concatenated (sum of target_lengths), lengths per example.
struct CTCLossOptions {
  KINDLE_ARG(int64_t, blank) = 0;
  KINDLE_ARG(EnumName, reduction) = "mean";
  KINDLE_ARG(bool, zero_infinity) = false;
};
class CTCLossImpl : public Module {
 public:
  explicit CTCLossImpl(const CTCLossOptions& o = {}) : options(o) {}
  Tensor forward(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                 const Tensor& target_lengths);
  KINDLE_MODULE_CALL
  CTCLossOptions options;
};
KINDLE_MODULE(CTCLoss);

// The triplet margin loss under any distance: max(d(a, p) - d(a, n) + margin, 0), with swap
// taking min(d(a, n), d(p, n)); the default distance is pairwise_distance.
struct TripletMarginWithDistanceLossOptions {
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  KINDLE_ARG(std::optional<distance_function_t>, distance_function);
  KINDLE_ARG(double, margin) = 1.0;
  KINDLE_ARG(bool, swap) = false;
  KINDLE_ARG(EnumName, reduction) = "mean";
};
class TripletMarginWithDistanceLossImpl : public Module {
 public:
  explicit TripletMarginWithDistanceLossImpl(const TripletMarginWithDistanceLossOptions& o = {});
  Tensor forward(const Tensor& anchor, const Tensor& positive, const Tensor& negative);
  KINDLE_MODULE_CALL
  TripletMarginWithDistanceLossOptions options;
};
KINDLE_MODULE(TripletMarginWithDistanceLoss);

}  // namespace kindle::nn
