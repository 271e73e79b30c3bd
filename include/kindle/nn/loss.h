// Loss modules: forward(input, target) over the C++ loss ops. Class weights are buffers named
// "weight" (and "pos_weight"), as in Python, so they follow to(dtype) and appear in state dicts.
//   nn::CrossEntropyLoss loss;  Tensor l = loss(logits, labels);
#pragma once
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

}  // namespace kindle::nn
