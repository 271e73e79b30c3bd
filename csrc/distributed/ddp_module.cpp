// The C++ front end's DistributedDataParallel module (kindle/nn/parallel.h).
#include "kindle/autograd.h"
#include "kindle/nn/parallel.h"

namespace kindle::nn {

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<Module> m, distributed::ProcessGroupPtr group,
                                                 DistributedDataParallelOptions options)
    : module(std::move(m)), group_(std::move(group)), options_(options) {
  KINDLE_CHECK_VALUE(module != nullptr, "DistributedDataParallel: the module is null");
  KINDLE_CHECK_VALUE(group_ != nullptr, "DistributedDataParallel: the process group is null");
  register_module("module", Ptr<Module>(module));
  std::vector<Tensor> params;
  for (const Tensor& p : module->parameters())
    if (p.requires_grad()) params.push_back(p);
  KINDLE_CHECK(!params.empty(), "DistributedDataParallel is not needed when a module doesn't have any parameter that "
               "requires a gradient.");
  if (group_->size() > 1) {
    std::vector<Tensor> state = module->parameters();
    for (const Tensor& b : module->buffers()) state.push_back(b);
    distributed::broadcast_coalesced(group_, state, 0);
  }
  distributed::ReducerOptions ro;
  ro.bucket_cap_mb = options.bucket_cap_mb;
  ro.find_unused_parameters = options.find_unused_parameters;
  ro.gradient_as_bucket_view = options.gradient_as_bucket_view;
  reducer_ = std::make_unique<distributed::Reducer>(std::move(params), group_, ro);
}

void DistributedDataParallel::prepare_forward() {
  reducer_->prepare_for_forward();
  if (options_.broadcast_buffers && group_->size() > 1 && autograd::GradMode::is_enabled()) {
    std::vector<Tensor> buffers = module->buffers();
    if (!buffers.empty()) distributed::broadcast_coalesced(group_, buffers, 0);
  }
}

Tensor DistributedDataParallel::forward(const Tensor& input) {
  prepare_forward();
  return module->forward(input);
}

}  // namespace kindle::nn
