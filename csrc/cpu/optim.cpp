// The fused optimizer steps' kernels (ops/optim_kernels.h): per kind a branch-free inner loop
// compiled for each combination of its flags, over the group's elements as one flat range.
#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "cpu/parallel.h"
#include "ops/optim_kernels.h"

namespace kindle::cpu {
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

// The group's tensors as the loops read them: every slot contiguous of the group's dtype.
struct Rows {
  const FusedStepArgs& a;
  DType dtype = a.dtype;
  std::vector<int64_t> numels() const {
    std::vector<int64_t> r;
    for (auto& row : *a.rows) r.push_back(row[0].numel());
    return r;
  }
  template <typename T> T* ptr(size_t i, size_t k) const { return static_cast<T*>((*a.rows)[i][k].data_ptr()); }
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

void sgd_step(const FusedStepArgs& a) {
  const optim::SGDHyper& h = *static_cast<const optim::SGDHyper*>(a.hyper);
  const auto& first = *a.fresh;
  const bool has_buf = h.momentum != 0;
  Rows grp{a};
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
}

void adam_step(const FusedStepArgs& a) {
  const optim::AdamHyper& h = *static_cast<const optim::AdamHyper*>(a.hyper);
  const auto& steps = *a.steps;
  Rows grp{a};
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
}

void rmsprop_step(const FusedStepArgs& a) {
  const optim::RMSpropHyper& h = *static_cast<const optim::RMSpropHyper*>(a.hyper);
  Rows grp{a};
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
}

void adagrad_step(const FusedStepArgs& a) {
  const optim::AdagradHyper& h = *static_cast<const optim::AdagradHyper*>(a.hyper);
  const auto& steps = *a.steps;
  Rows grp{a};
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
}

void fused_step_kernel(const FusedStepArgs& a) {
  switch (a.kind) {
    case FusedStep::Sgd: sgd_step(a); break;
    case FusedStep::Adam: adam_step(a); break;
    case FusedStep::Rmsprop: rmsprop_step(a); break;
    case FusedStep::Adagrad: adagrad_step(a); break;
  }
}

}  // namespace
}  // namespace kindle::cpu

namespace kindle {
KINDLE_REGISTER_KERNEL(fused_step_stub, DeviceType::CPU, &cpu::fused_step_kernel);
}  // namespace kindle
