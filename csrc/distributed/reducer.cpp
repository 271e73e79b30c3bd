// DistributedDataParallel's gradient reducer. Parameters are grouped into buckets in reverse
// registration order (roughly the order backward produces their gradients), one dtype per bucket.
// A post-accumulate-grad hook copies each gradient into its bucket; a full bucket is divided by
// the world size and all-reduced asynchronously while backward goes on, strictly in bucket order
// (so every rank issues the same collectives in the same order). A callback at the end of
// backward waits for the buckets and writes the averages back into .grad.
#include <algorithm>
#include <map>

#include "kindle/autograd.h"
#include "kindle/distributed.h"
#include "kindle/ops.h"

namespace kindle::distributed {

using Clock = std::chrono::steady_clock;

struct Reducer::Impl : std::enable_shared_from_this<Reducer::Impl> {
  struct Bucket {
    std::vector<int64_t> params;   // indices into `params`
    std::vector<int64_t> offsets;  // element offset of each in `contents`
    Tensor contents;
    size_t pending = 0;
    bool ready = false;
    WorkPtr work;
    std::function<Tensor()> hook_result;  // with a comm hook: waits and returns the reduced bucket
  };
  Reducer* owner = nullptr;
  std::vector<Tensor> params;
  std::vector<std::pair<int64_t, int64_t>> where;  // param -> (bucket, slot in bucket)
  std::vector<Bucket> buckets;
  std::vector<uint64_t> hook_ids;
  std::vector<char> marked;  // ready in this backward
  ProcessGroupPtr group;
  ReducerOptions options;
  Reducer::CommHook comm_hook;
  bool running = false;  // a backward has marked something and not finished
  size_t next_launch = 0;

  void build_buckets() {
    std::map<DType, size_t> open;  // dtype -> bucket being filled
    std::map<DType, double> filled;
    for (int64_t i = int64_t(params.size()) - 1; i >= 0; --i) {
      const Tensor& p = params[size_t(i)];
      DType dt = p.dtype();
      auto it = open.find(dt);
      double cap = (it != open.end() && it->second == 0 ? options.first_bucket_cap_mb : options.bucket_cap_mb) * 1048576;
      if (it == open.end() || (filled[dt] > 0 && filled[dt] + double(p.nbytes()) > cap)) {
        buckets.emplace_back();
        open[dt] = buckets.size() - 1;
        filled[dt] = 0;
      }
      Bucket& b = buckets[open[dt]];
      int64_t off = b.offsets.empty() ? 0 : b.offsets.back() + params[size_t(b.params.back())].numel();
      where[size_t(i)] = {int64_t(open[dt]), int64_t(b.params.size())};
      b.params.push_back(i);
      b.offsets.push_back(off);
      filled[dt] += double(p.nbytes());
    }
    for (Bucket& b : buckets) {
      int64_t n = b.offsets.back() + params[size_t(b.params.back())].numel();
      b.contents = zeros({n}, params[size_t(b.params[0])].dtype());
    }
  }

  Tensor slot_view(const Bucket& b, size_t k) const {
    const Tensor& p = params[size_t(b.params[k])];
    return b.contents.narrow(0, b.offsets[k], p.numel()).view(p.sizes());
  }

  void reset() {
    running = false;
    next_launch = 0;
    std::fill(marked.begin(), marked.end(), 0);
    for (Bucket& b : buckets) {
      b.pending = b.params.size();
      b.ready = false;
      b.work.reset();
      b.hook_result = nullptr;
    }
  }

  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].ready) {
      size_t index = next_launch++;
      Bucket& b = buckets[index];
      if (comm_hook) {
        b.hook_result = comm_hook(index, b.contents);  // the hook divides and reduces
        continue;
      }
      b.contents.div_(scalar_tensor_of(group->size(), b.contents.dtype()));
      b.work = group->all_reduce(b.contents, ReduceOp::Sum);
    }
  }

  void mark_ready(int64_t i, bool has_grad) {
    auto [bi, k] = where[size_t(i)];
    Bucket& b = buckets[size_t(bi)];
    Tensor view = slot_view(b, size_t(k));
    const Tensor& p = params[size_t(i)];
    Tensor g = has_grad ? p.grad() : Tensor();
    if (!g.defined()) {
      view.zero_();
    } else if (!g.is_same(view)) {
      KINDLE_CHECK(g.sizes() == p.sizes() && g.dtype() == p.dtype(), "DistributedDataParallel: the gradient of ",
                   "parameter ", i, " has shape ", g.sizes(), " and dtype ", g.dtype(), "; expected ", p.sizes(),
                   " and ", p.dtype());
      view.copy_(g);
      if (options.gradient_as_bucket_view) p.set_grad(view);
    }
    if (--b.pending == 0) {
      b.ready = true;
      launch_ready();
    }
  }

  void on_gradient(int64_t i) {
    if (!owner || !owner->sync_) return;
    if (!running) {
      running = true;
      std::weak_ptr<Impl> weak = weak_from_this();
      autograd::queue_callback([weak] {
        if (auto self = weak.lock()) self->finalize();
      });
    }
    KINDLE_CHECK(!marked[size_t(i)], "DistributedDataParallel: parameter ", i, " got its gradient twice in one "
                 "backward pass (Expected to mark a variable ready only once). A parameter used in several "
                 "reentrant backward passes, or a backward called twice on part of the graph, is not supported");
    marked[size_t(i)] = 1;
    mark_ready(i, true);
  }

  void finalize() {
    std::vector<int64_t> unused;
    for (size_t i = 0; i < params.size(); ++i)
      if (!marked[i]) unused.push_back(int64_t(i));
    if (!unused.empty() && !options.find_unused_parameters) {
      wait_all();
      reset();
      std::string s;
      for (size_t i = 0; i < unused.size() && i < 20; ++i) s += (i ? ", " : "") + std::to_string(unused[i]);
      throw Error(
          "DistributedDataParallel: Expected to have finished reduction in the prior iteration before starting a new "
          "one. This error indicates that your module has parameters that were not used in producing loss. Enable "
          "unused parameter detection by passing the keyword argument `find_unused_parameters=True` to "
          "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` function outputs "
          "participate in calculating loss. Parameter indices which did not receive grad: " + s);
    }
    for (int64_t i : unused) mark_ready(i, false);
    // Which parameters some rank used: a parameter no rank used keeps its .grad untouched.
    Tensor used;
    WorkPtr used_work;
    if (options.find_unused_parameters) {
      used = zeros({int64_t(params.size())}, kInt32);
      auto* u = static_cast<int32_t*>(used.data_ptr());
      for (size_t i = 0; i < params.size(); ++i) u[i] = marked[i];
      used_work = group->all_reduce(used, ReduceOp::Sum);
    }
    auto t0 = Clock::now();
    wait_all();
    if (used_work) used_work->wait();
    owner->last_wait_s_ = std::chrono::duration<double>(Clock::now() - t0).count();
    owner->unused_ = unused;
    const int32_t* u = used.defined() ? static_cast<const int32_t*>(used.data_ptr()) : nullptr;
    for (Bucket& b : buckets) {
      for (size_t k = 0; k < b.params.size(); ++k) {
        const Tensor& p = params[size_t(b.params[k])];
        if (u && u[b.params[k]] == 0) continue;
        Tensor view = slot_view(b, k);
        Tensor g = p.grad();
        if (g.defined() && g.is_same(view)) continue;
        if (g.defined()) g.copy_(view);
        else p.set_grad(options.gradient_as_bucket_view ? view : view.clone());
      }
    }
    reset();
  }

  void wait_all() {
    std::exception_ptr first;
    for (Bucket& b : buckets) {
      if (!b.work && !b.hook_result) continue;
      try {
        if (b.work) b.work->wait();
        if (b.hook_result) {
          Tensor r = b.hook_result();
          b.hook_result = nullptr;
          KINDLE_CHECK(r.defined() && r.numel() == b.contents.numel(), "DistributedDataParallel: the communication "
                       "hook's future must hold a tensor of the bucket's ", b.contents.numel(), " elements");
          if (!r.is_same(b.contents)) b.contents.copy_(r.reshape({-1}));
        }
      } catch (...) {
        if (!first) first = std::current_exception();
      }
    }
    if (first) {
      reset();
      std::rethrow_exception(first);
    }
  }
};

Reducer::Reducer(std::vector<Tensor> parameters, ProcessGroupPtr group, ReducerOptions options)
    : impl_(std::make_shared<Impl>()) {
  KINDLE_CHECK_VALUE(group != nullptr, "DistributedDataParallel: the process group is None (call "
                     "init_process_group first)");
  KINDLE_CHECK_VALUE(options.bucket_cap_mb > 0, "DistributedDataParallel: bucket_cap_mb must be positive, got ",
                     options.bucket_cap_mb);
  impl_->owner = this;
  impl_->group = std::move(group);
  impl_->options = options;
  for (Tensor& p : parameters) {
    KINDLE_CHECK_VALUE(p.requires_grad(), "Reducer: every parameter must require grad");
    KINDLE_CHECK_VALUE(!p.grad_fn(), "Reducer: parameters must be leaf tensors");
  }
  impl_->params = std::move(parameters);
  impl_->where.resize(impl_->params.size());
  impl_->marked.assign(impl_->params.size(), 0);
  if (!impl_->params.empty()) impl_->build_buckets();
  impl_->reset();
  std::weak_ptr<Impl> weak = impl_;
  for (size_t i = 0; i < impl_->params.size(); ++i)
    impl_->hook_ids.push_back(autograd::register_post_accumulate_grad_hook(
        impl_->params[i], [weak, i](const Tensor&) {
          if (auto self = weak.lock()) self->on_gradient(int64_t(i));
        }));
}

Reducer::~Reducer() {
  for (size_t i = 0; i < impl_->params.size(); ++i)
    autograd::remove_post_accumulate_grad_hook(impl_->params[i], impl_->hook_ids[i]);
  impl_->owner = nullptr;
}

void Reducer::prepare_for_forward() {
  KINDLE_CHECK(!impl_->running, "DistributedDataParallel: Expected to have finished reduction in the prior "
               "iteration before starting a new one (a backward pass is still reducing gradients)");
}

void Reducer::set_comm_hook(CommHook hook) {
  KINDLE_CHECK(!impl_->comm_hook, "DistributedDataParallel: register_comm_hook can only be called once");
  impl_->comm_hook = std::move(hook);
}

void Reducer::join_step() {
  // This rank has no input left: it contributes zeros to the buckets the others reduce, in the
  // same order, so that their collectives complete.
  autograd::NoGradGuard no_grad;
  for (auto& b : impl_->buckets) {
    b.contents.zero_();
    b.ready = true;
  }
  impl_->launch_ready();
  if (impl_->options.find_unused_parameters)
    impl_->group->all_reduce(zeros({int64_t(impl_->params.size())}, kInt32), ReduceOp::Sum)->wait();
  impl_->wait_all();
  impl_->reset();
}

std::vector<std::vector<int64_t>> Reducer::bucket_indices() const {
  std::vector<std::vector<int64_t>> out;
  for (const auto& b : impl_->buckets) out.push_back(b.params);
  return out;
}

void broadcast_coalesced(const ProcessGroupPtr& group, std::vector<Tensor> tensors, int root, double buffer_mb) {
  // Per dtype, consecutive tensors up to buffer_mb are flattened into one broadcast.
  autograd::NoGradGuard no_grad;
  std::map<DType, std::vector<Tensor>> by_dtype;
  for (const Tensor& t : tensors) by_dtype[t.dtype()].push_back(t);
  for (auto& [dt, ts] : by_dtype) {
    size_t start = 0;
    while (start < ts.size()) {
      size_t end = start;
      double bytes = 0;
      std::vector<Tensor> flat;
      while (end < ts.size() && (end == start || bytes + double(ts[end].nbytes()) <= buffer_mb * 1024 * 1024)) {
        bytes += double(ts[end].nbytes());
        flat.push_back(ts[end].reshape({-1}));
        ++end;
      }
      Tensor buf = cat(flat);
      group->broadcast(buf, root)->wait();
      int64_t off = 0;
      for (size_t i = start; i < end; ++i) {
        ts[i].copy_(buf.narrow(0, off, ts[i].numel()).view(ts[i].sizes()));
        off += ts[i].numel();
      }
      start = end;
    }
  }
}

}  // namespace kindle::distributed
