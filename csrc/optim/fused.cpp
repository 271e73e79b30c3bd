// Fused optimizer steps (see kindle/optim.h). Each step is one elementwise pass over all the
// parameters of a group: the group's elements are split across threads as one flat range, so
// many small tensors parallelise as well as one large one. Tensors that are not contiguous
// float32/float64 (half precision, strided) are staged through contiguous float copies.
#include "kindle/optim.h"

#include <algorithm>
#include <array>
#include <type_traits>
#include <cmath>

#include "cpu/parallel.h"
#include "kindle/autograd.h"
#include "kindle/error.h"
#include "ops/kernels.h"

namespace kindle::optim {
namespace {

// Calls f(i, begin, end) for the pieces of tensor i covered by the flat range of all elements.
template <typename F>
void for_each_piece(const std::vector<int64_t>& numels, const F& f) {
  std::vector<int64_t> start(numels.size() + 1, 0);
  for (size_t i = 0; i < numels.size(); ++i) start[i + 1] = start[i] + numels[i];
  cpu::parallel_for(0, start.back(), cpu::kGrainSize, [&](int64_t b, int64_t e) {
    size_t i = size_t(std::upper_bound(start.begin(), start.end(), b) - start.begin()) - 1;
    for (; i < numels.size() && start[i] < e; ++i) {
      int64_t lo = std::max(b, start[i]) - start[i], hi = std::min(e, start[i + 1]) - start[i];
      if (lo < hi) f(i, lo, hi);
    }
  });
}

// The tensors of one parameter that a step reads and writes: slot 0 is the parameter, slot 1
// the gradient, the rest its state. Fast when every slot is contiguous and of the parameter's
// float32/float64 dtype; otherwise the slots are staged in contiguous copies and copied back.
struct Group {
  const char* op;
  std::vector<std::vector<Tensor>> slots;  // [param][slot]
  std::vector<std::vector<Tensor>> staged;
  DType dtype = kFloat32;

  Group(const char* op_, TensorList params, TensorList grads, std::initializer_list<TensorList> states) : op(op_) {
    const size_t n = params.size();
    KINDLE_CHECK(grads.size() == n, op, ": got ", n, " parameters but ", grads.size(), " gradients");
    for (TensorList s : states)
      KINDLE_CHECK(s.empty() || s.size() == n, op, ": got ", n, " parameters but ", s.size(), " state tensors");
    if (n) dtype = params[0].dtype();
    for (size_t i = 0; i < n; ++i) {
      std::vector<Tensor> row{params[i], grads[i]};
      for (TensorList s : states)
        if (!s.empty()) row.push_back(s[i]);
      for (size_t k = 1; k < row.size(); ++k)
        KINDLE_CHECK(row[k].sizes() == params[i].sizes(), op, ": parameter ", i, " has shape ", params[i].sizes(),
                     " but its ", k == 1 ? "gradient" : "state", " has shape ", row[k].sizes());
      KINDLE_CHECK(params[i].is_floating_point(), op, ": parameter ", i, " has dtype ", params[i].dtype(),
                   "; optimizers step floating-point parameters only");
      KINDLE_CHECK(params[i].dtype() == dtype, op, ": parameters of one call must share a dtype (",
                   dtype, " and ", params[i].dtype(), "); call once per dtype");
      slots.push_back(std::move(row));
    }
    bool direct = dtype == kFloat32 || dtype == kFloat64;
    for (auto& row : slots)
      for (auto& t : row) direct = direct && t.is_contiguous() && t.dtype() == dtype;
    if (!direct) {
      DType compute = dtype == kFloat64 ? kFloat64 : kFloat32;
      for (auto& row : slots) {
        std::vector<Tensor> s;
        for (auto& t : row) s.push_back(t.to(compute).contiguous().clone());
        staged.push_back(std::move(s));
      }
      dtype = compute;
    }
  }
  std::vector<Tensor>& row(size_t i) { return staged.empty() ? slots[i] : staged[i]; }
  std::vector<int64_t> numels() const {
    std::vector<int64_t> r;
    for (auto& row : slots) r.push_back(row[0].numel());
    return r;
  }
  template <typename T> T* ptr(size_t i, size_t k) { return static_cast<T*>(row(i)[k].data_ptr()); }
  // Writes staged results back (every slot but the gradient) and bumps the versions.
  void finish() {
    autograd::NoGradGuard g;
    for (size_t i = 0; i < slots.size(); ++i) {
      for (size_t k = 0; k < slots[i].size(); ++k) {
        if (k == 1) continue;
        if (!staged.empty()) slots[i][k].copy_(staged[i][k]);
        else slots[i][k].bump_version();
      }
    }
  }
};

template <typename F>
void dispatch_float(DType d, const F& f) {
  if (d == kFloat64) f(double{});
  else f(float{});
}


// Calls f(std::bool_constant<b0>{}, ...) for the runtime flags: the inner loops are compiled
// once per combination, without branches (the branchy loop ran at half the speed).
template <size_t N, typename F, typename... Done>
void with_flags(std::array<bool, N> flags, const F& f, Done... done) {
  if constexpr (sizeof...(Done) == N) {
    f(done...);
  } else {
    if (flags[sizeof...(Done)]) with_flags<N>(flags, f, done..., std::true_type{});
    else with_flags<N>(flags, f, done..., std::false_type{});
  }
}

template <typename T>
struct SgdScalars {
  T lr, wd, mom, damp1;
};

template <typename T, bool WD, bool BUF, bool FRESH, bool NESTEROV, bool MAXIMIZE>
void sgd_loop(T* __restrict p, const T* __restrict g, T* __restrict buf, int64_t n, const SgdScalars<T>& k) {
  for (int64_t j = 0; j < n; ++j) {
    T d = MAXIMIZE ? -g[j] : g[j];
    if constexpr (WD) d = d + k.wd * p[j];
    if constexpr (BUF) {
      T m;
      if constexpr (FRESH) m = d;
      else m = buf[j] * k.mom + k.damp1 * d;
      buf[j] = m;
      d = NESTEROV ? d + k.mom * m : m;
    }
    p[j] = p[j] - k.lr * d;
  }
}

template <typename T>
struct AdamScalars {
  T b1c, b2, b2c, eps, wd, decay, step_size, bc2_sqrt;
};

template <typename T, bool WD, bool DECOUPLED, bool AMSGRAD, bool MAXIMIZE>
void adam_loop(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v, T* __restrict vmax,
               int64_t n, const AdamScalars<T>& k) {
  for (int64_t j = 0; j < n; ++j) {
    T d = MAXIMIZE ? -g[j] : g[j];
    T pj = p[j];
    if constexpr (WD && DECOUPLED) pj = pj * k.decay;
    if constexpr (WD && !DECOUPLED) d = d + k.wd * pj;
    T mj = m[j] + k.b1c * (d - m[j]);  // lerp(m, d, 1 - beta1), as torch computes it for weights < 0.5
    T vj = v[j] * k.b2 + k.b2c * d * d;
    m[j] = mj;
    v[j] = vj;
    if constexpr (AMSGRAD) {
      vj = std::max(vmax[j], vj);
      vmax[j] = vj;
    }
    T denom = std::sqrt(vj) / k.bc2_sqrt + k.eps;
    p[j] = pj - k.step_size * (mj / denom);
  }
}

template <typename T>
struct RmspropScalars {
  T lr, alpha, alpha_c, eps, wd, mom;
};

template <typename T, bool WD, bool CENTERED, bool MOMENTUM, bool MAXIMIZE>
void rmsprop_loop(T* __restrict p, const T* __restrict g, T* __restrict sq, T* __restrict gavg, T* __restrict buf,
                  int64_t n, const RmspropScalars<T>& k) {
  for (int64_t j = 0; j < n; ++j) {
    T d = MAXIMIZE ? -g[j] : g[j];
    if constexpr (WD) d = d + k.wd * p[j];
    T s = sq[j] * k.alpha + k.alpha_c * d * d;
    sq[j] = s;
    T avg;
    if constexpr (CENTERED) {
      T ga = gavg[j] + k.alpha_c * (d - gavg[j]);
      gavg[j] = ga;
      avg = std::sqrt(s - ga * ga) + k.eps;
    } else {
      avg = std::sqrt(s) + k.eps;
    }
    if constexpr (MOMENTUM) {
      T bj = buf[j] * k.mom + d / avg;
      buf[j] = bj;
      p[j] = p[j] - k.lr * bj;
    } else {
      p[j] = p[j] - k.lr * (d / avg);
    }
  }
}

// The same steps written with ops, for devices whose tensors the host loops above cannot read
// (CUDA; meta, where every kernel does nothing): each line is one elementwise kernel on the device.
void sgd_step_ops(TensorList params, TensorList grads, std::vector<Tensor>& bufs, const SGDHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_tensor_of(v, p.dtype(), p.device()); };
    Tensor g = h.maximize ? grads[i].neg() : grads[i];
    if (h.weight_decay != 0) g = g.add(p, h.weight_decay);
    if (h.momentum != 0) {
      if (!bufs[i].defined()) bufs[i] = g.clone();
      else bufs[i].mul_(c(h.momentum)).add_(g, 1 - h.dampening);
      g = h.nesterov ? g.add(bufs[i], h.momentum) : bufs[i];
    }
    p.add_(g, -h.lr);
  }
}

void adam_step_ops(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                   TensorList max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_tensor_of(v, p.dtype(), p.device()); };
    Tensor g = h.maximize ? grads[i].neg() : grads[i];
    if (h.weight_decay != 0) {
      if (h.decoupled_weight_decay) p.mul_(c(1 - h.lr * h.weight_decay));
      else g = g.add(p, h.weight_decay);
    }
    exp_avgs[i].mul_(c(h.beta1)).add_(g, 1 - h.beta1);
    exp_avg_sqs[i].mul_(c(h.beta2)).add_(g.mul(g), 1 - h.beta2);
    const double bc1 = 1 - std::pow(h.beta1, double(steps[i])), bc2 = 1 - std::pow(h.beta2, double(steps[i]));
    Tensor v = exp_avg_sqs[i];
    if (h.amsgrad) {
      max_exp_avg_sqs[i].copy_(max_exp_avg_sqs[i].maximum(v));
      v = max_exp_avg_sqs[i];
    }
    Tensor denom = v.sqrt().div(c(std::sqrt(bc2))).add(c(h.eps));
    p.add_(exp_avgs[i].div(denom), -h.lr / bc1);
  }
}

void rmsprop_step_ops(TensorList params, TensorList grads, TensorList square_avgs, TensorList grad_avgs,
                      TensorList momentum_buffers, const RMSpropHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_tensor_of(v, p.dtype(), p.device()); };
    Tensor g = h.maximize ? grads[i].neg() : grads[i];
    if (h.weight_decay != 0) g = g.add(p, h.weight_decay);
    square_avgs[i].mul_(c(h.alpha)).add_(g.mul(g), 1 - h.alpha);
    Tensor avg;
    if (h.centered) {
      grad_avgs[i].add_(g.sub(grad_avgs[i]), 1 - h.alpha);
      avg = square_avgs[i].sub(grad_avgs[i].mul(grad_avgs[i])).sqrt().add(c(h.eps));
    } else {
      avg = square_avgs[i].sqrt().add(c(h.eps));
    }
    if (h.momentum > 0) {
      momentum_buffers[i].mul_(c(h.momentum)).add_(g.div(avg));
      p.add_(momentum_buffers[i], -h.lr);
    } else {
      p.add_(g.div(avg), -h.lr);
    }
  }
}

void adagrad_step_ops(TensorList params, TensorList grads, TensorList state_sums, const std::vector<int64_t>& steps,
                      const AdagradHyper& h) {
  autograd::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const Tensor& p = params[i];
    auto c = [&](double v) { return scalar_tensor_of(v, p.dtype(), p.device()); };
    Tensor g = h.maximize ? grads[i].neg() : grads[i];
    if (h.weight_decay != 0) g = g.add(p, h.weight_decay);
    state_sums[i].add_(g.mul(g));
    const double clr = h.lr / (1 + double(steps[i] - 1) * h.lr_decay);
    p.add_(g.div(state_sums[i].sqrt().add(c(h.eps))), -clr);
  }
}

}  // namespace

void sgd_step(TensorList params, TensorList grads, std::vector<Tensor>& momentum_buffers, const SGDHyper& h) {
  const size_t n = params.size();
  KINDLE_CHECK(momentum_buffers.size() == n, "sgd_step: got ", n, " parameters but ", momentum_buffers.size(),
               " momentum buffers");
  if (n && !params[0].device().is_cpu()) return sgd_step_ops(params, grads, momentum_buffers, h);
  std::vector<bool> first(n, false);
  if (h.momentum != 0) {
    // A missing buffer starts as the (decayed) gradient: stage it as zeros and flag the element.
    for (size_t i = 0; i < n; ++i)
      if (!momentum_buffers[i].defined()) {
        momentum_buffers[i] = zeros_like(params[i]);
        first[i] = true;
      }
  }
  std::vector<Tensor> bufs = h.momentum != 0 ? momentum_buffers : std::vector<Tensor>{};
  Group grp("sgd_step", params, grads, {TensorList(bufs)});
  const bool has_buf = h.momentum != 0;
  dispatch_float(grp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const SgdScalars<T> k{T(h.lr), T(h.weight_decay), T(h.momentum), T(1 - h.dampening)};
    for_each_piece(grp.numels(), [&](size_t i, int64_t b, int64_t e) {
      T* p = grp.ptr<T>(i, 0) + b;
      const T* g = grp.ptr<T>(i, 1) + b;
      T* buf = has_buf ? grp.ptr<T>(i, 2) + b : nullptr;
      with_flags<5>({h.weight_decay != 0, has_buf, has_buf && first[i], h.nesterov, h.maximize}, [&](auto... f) {
        sgd_loop<T, decltype(f)::value...>(p, g, buf, e - b, k);
      });
    });
  });
  grp.finish();
}

void adam_step(TensorList params, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
               TensorList max_exp_avg_sqs, const std::vector<int64_t>& steps, const AdamHyper& h) {
  KINDLE_CHECK(steps.size() == params.size(), "adam_step: got ", params.size(), " parameters but ", steps.size(),
               " step counts");
  KINDLE_CHECK(!h.amsgrad || max_exp_avg_sqs.size() == params.size(), "adam_step: amsgrad needs max_exp_avg_sqs");
  for (int64_t s : steps) KINDLE_CHECK(s >= 1, "adam_step: step counts start at 1, got ", s);
  if (!params.empty() && !params[0].device().is_cpu())
    return adam_step_ops(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, h);
  Group grp("adam_step", params, grads, {exp_avgs, exp_avg_sqs, h.amsgrad ? max_exp_avg_sqs : TensorList{}});
  dispatch_float(grp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T b1c = T(1 - h.beta1), b2 = T(h.beta2), b2c = T(1 - h.beta2), eps = T(h.eps), wd = T(h.weight_decay);
    const T decay = T(1 - h.lr * h.weight_decay);
    for_each_piece(grp.numels(), [&](size_t i, int64_t b, int64_t e) {
      const double bc1 = 1 - std::pow(h.beta1, double(steps[i])), bc2 = 1 - std::pow(h.beta2, double(steps[i]));
      const T step_size = T(h.lr / bc1), bc2_sqrt = T(std::sqrt(bc2));
      AdamScalars<T> k{b1c, b2, b2c, eps, wd, decay, step_size, bc2_sqrt};
      T* p = grp.ptr<T>(i, 0) + b;
      const T* g = grp.ptr<T>(i, 1) + b;
      T* m = grp.ptr<T>(i, 2) + b;
      T* v = grp.ptr<T>(i, 3) + b;
      T* vmax = h.amsgrad ? grp.ptr<T>(i, 4) + b : nullptr;
      with_flags<4>({h.weight_decay != 0, h.decoupled_weight_decay, h.amsgrad, h.maximize}, [&](auto... f) {
        adam_loop<T, decltype(f)::value...>(p, g, m, v, vmax, e - b, k);
      });
    });
  });
  grp.finish();
}

void rmsprop_step(TensorList params, TensorList grads, TensorList square_avgs, TensorList grad_avgs,
                  TensorList momentum_buffers, const RMSpropHyper& h) {
  KINDLE_CHECK(!h.centered || grad_avgs.size() == params.size(), "rmsprop_step: centered needs grad_avgs");
  KINDLE_CHECK(h.momentum <= 0 || momentum_buffers.size() == params.size(),
               "rmsprop_step: momentum needs momentum_buffers");
  TensorList ga = h.centered ? grad_avgs : TensorList{}, mb = h.momentum > 0 ? momentum_buffers : TensorList{};
  if (!params.empty() && !params[0].device().is_cpu())
    return rmsprop_step_ops(params, grads, square_avgs, grad_avgs, momentum_buffers, h);
  Group grp("rmsprop_step", params, grads, {square_avgs, ga, mb});
  dispatch_float(grp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T lr = T(h.lr), alpha = T(h.alpha), alpha_c = T(1 - h.alpha), eps = T(h.eps), wd = T(h.weight_decay),
            mom = T(h.momentum);
    for_each_piece(grp.numels(), [&](size_t i, int64_t b, int64_t e) {
      T* p = grp.ptr<T>(i, 0) + b;
      const T* g = grp.ptr<T>(i, 1) + b;
      T* sq = grp.ptr<T>(i, 2) + b;
      size_t k = 3;
      T* gavg = h.centered ? grp.ptr<T>(i, k++) + b : nullptr;
      T* buf = h.momentum > 0 ? grp.ptr<T>(i, k++) + b : nullptr;
      RmspropScalars<T> sc{lr, alpha, alpha_c, eps, wd, mom};
      with_flags<4>({h.weight_decay != 0, h.centered, h.momentum > 0, h.maximize}, [&](auto... f) {
        rmsprop_loop<T, decltype(f)::value...>(p, g, sq, gavg, buf, e - b, sc);
      });
    });
  });
  grp.finish();
}

void adagrad_step(TensorList params, TensorList grads, TensorList state_sums, const std::vector<int64_t>& steps,
                  const AdagradHyper& h) {
  KINDLE_CHECK(steps.size() == params.size(), "adagrad_step: got ", params.size(), " parameters but ",
               steps.size(), " step counts");
  if (!params.empty() && !params[0].device().is_cpu()) return adagrad_step_ops(params, grads, state_sums, steps, h);
  Group grp("adagrad_step", params, grads, {state_sums});
  dispatch_float(grp.dtype, [&](auto tag) {
    using T = decltype(tag);
    const T eps = T(h.eps), wd = T(h.weight_decay);
    for_each_piece(grp.numels(), [&](size_t i, int64_t b, int64_t e) {
      const T clr = T(h.lr / (1 + double(steps[i] - 1) * h.lr_decay));
      T* p = grp.ptr<T>(i, 0);
      const T* g = grp.ptr<T>(i, 1);
      T* sum = grp.ptr<T>(i, 2);
      for (int64_t j = b; j < e; ++j) {
        T d = h.maximize ? -g[j] : g[j];
        if (h.weight_decay != 0) d = d + wd * p[j];
        T s = sum[j] + d * d;
        sum[j] = s;
        p[j] = p[j] - clr * (d / (std::sqrt(s) + eps));
      }
    });
  });
  grp.finish();
}

}  // namespace kindle::optim
