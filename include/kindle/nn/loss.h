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

class CrossEntropyLoss : public Loss {
 public:
  explicit CrossEntropyLoss(const CrossEntropyLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  CrossEntropyLossOptions options;
  Tensor weight;
};

class NLLLoss : public Loss {
 public:
  explicit NLLLoss(const NLLLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  NLLLossOptions options;
  Tensor weight;
};

class BCELoss : public Loss {
 public:
  explicit BCELoss(const BCELossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCELossOptions options;
  Tensor weight;
};

class BCEWithLogitsLoss : public Loss {
 public:
  explicit BCEWithLogitsLoss(const BCEWithLogitsLossOptions& options = {});
  Tensor forward(const Tensor& input, const Tensor& target) override;
  BCEWithLogitsLossOptions options;
  Tensor weight, pos_weight;
};

class MSELoss : public Loss {
 public:
  explicit MSELoss(const MSELossOptions& options = {}) : Loss(options.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

class L1Loss : public Loss {
 public:
  explicit L1Loss(const L1LossOptions& options = {}) : Loss(options.reduction()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
};

class SmoothL1Loss : public Loss {
 public:
  explicit SmoothL1Loss(const SmoothL1LossOptions& options = {}) : Loss(options.reduction()), beta(options.beta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double beta;
};

class HuberLoss : public Loss {
 public:
  explicit HuberLoss(const HuberLossOptions& options = {}) : Loss(options.reduction()), delta(options.delta()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  double delta;
};

class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(const KLDivLossOptions& options = {})
      : Loss(options.reduction()), log_target(options.log_target()) {}
  Tensor forward(const Tensor& input, const Tensor& target) override;
  bool log_target;
};

}  // namespace kindle::nn
