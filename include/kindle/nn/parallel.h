// nn::DistributedDataParallel for the C++ front end: what Python's
// kindle.nn.parallel.DistributedDataParallel is. It registers the wrapped module as its child
// "module" (state dict keys gain the "module." prefix), sends rank 0's parameters and buffers to
// every rank at construction, and averages gradients across the group during backward through
// the distributed Reducer. forward() takes one tensor, like every Module; call the wrapped
// module through ddp->module for other signatures after ddp->prepare_forward().
#pragma once
#include <memory>

#include "kindle/distributed.h"
#include "kindle/nn/module.h"

namespace kindle::nn {

struct DistributedDataParallelOptions {
  double bucket_cap_mb = 25.0;
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
  bool broadcast_buffers = true;
};

class DistributedDataParallel : public Module {
 public:
  DistributedDataParallel(std::shared_ptr<Module> module, distributed::ProcessGroupPtr group,
                          DistributedDataParallelOptions options = {});
  Tensor forward(const Tensor& input) override;
  // Checks the previous reduction finished and sends rank 0's buffers (broadcast_buffers).
  void prepare_forward();
  // While the guard lives, gradients accumulate locally (the first backward after it averages them).
  class NoSync {
   public:
    explicit NoSync(distributed::Reducer& r) : reducer_(r), old_(r.sync()) { r.set_sync(false); }
    ~NoSync() { reducer_.set_sync(old_); }
    NoSync(const NoSync&) = delete;
    NoSync& operator=(const NoSync&) = delete;

   private:
    distributed::Reducer& reducer_;
    bool old_;
  };
  NoSync no_sync() { return NoSync(*reducer_); }
  distributed::Reducer& reducer() { return *reducer_; }
  std::string name() const override { return "DistributedDataParallel"; }

  std::shared_ptr<Module> module;

 private:
  distributed::ProcessGroupPtr group_;
  DistributedDataParallelOptions options_;
  std::unique_ptr<distributed::Reducer> reducer_;
};

}  // namespace kindle::nn
