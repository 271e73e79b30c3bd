// L-BFGS with an optional strong-Wolfe line search: PyTorch's algorithm (torch.optim.LBFGS),
// step for step, for both front ends (kindle.optim.LBFGS and kindle::optim::LBFGS).
//
// PyTorch mixes Python floats and 0-d float32 tensors in its scalar arithmetic (y.s, 1/y.s,
// H_diag, the step t, the cubic interpolation's terms), and the two round differently: a float
// meeting a float32 tensor is rounded to float32 first. Num reproduces that mix, so the iterates
// here round exactly as PyTorch's do.
#include <cmath>
#include <functional>

#include "kindle/autograd.h"
#include "kindle/optim.h"
#include "kindle/operators.h"

namespace kindle::optim {

namespace {

// A Python number (double) or a 0-d tensor, combined as Python combines them.
class Num {
 public:
  Num() = default;
  explicit Num(double v) : v_(v) {}
  explicit Num(const Tensor& t) {
    if (t.defined() && t.impl()->wrapped_number) v_ = t.item<double>();
    else t_ = t;
  }
  bool is_tensor() const { return t_.defined(); }
  Tensor tensor() const { return is_tensor() ? t_ : scalar_to_tensor(v_); }
  double value() const { return is_tensor() ? t_.item<double>() : v_; }

  template <typename D, typename T>
  static Num combine(const Num& a, const Num& b, D on_doubles, T on_tensors) {
    if (!a.is_tensor() && !b.is_tensor()) return Num(on_doubles(a.v_, b.v_));
    return Num(on_tensors(a.tensor(), b.tensor()));
  }
  template <typename D, typename T>
  static bool compare(const Num& a, const Num& b, D on_doubles, T on_tensors) {
    if (!a.is_tensor() && !b.is_tensor()) return on_doubles(a.v_, b.v_);
    return on_tensors(a.tensor(), b.tensor()).template item<bool>();
  }

 private:
  double v_ = 0;
  Tensor t_;
};

Num operator+(const Num& a, const Num& b) {
  return Num::combine(a, b, [](double x, double y) { return x + y; }, [](const Tensor& x, const Tensor& y) { return kindle::add(x, y); });
}
Num operator-(const Num& a, const Num& b) {
  return Num::combine(a, b, [](double x, double y) { return x - y; }, [](const Tensor& x, const Tensor& y) { return kindle::sub(x, y); });
}
Num operator*(const Num& a, const Num& b) {
  return Num::combine(a, b, [](double x, double y) { return x * y; }, [](const Tensor& x, const Tensor& y) { return kindle::mul(x, y); });
}
Num operator/(const Num& a, const Num& b) {
  return Num::combine(a, b, [](double x, double y) { return x / y; }, [](const Tensor& x, const Tensor& y) { return kindle::div(x, y); });
}
Num operator-(const Num& a) { return Num(0.0) - a; }
bool operator<(const Num& a, const Num& b) {
  return Num::compare(a, b, [](double x, double y) { return x < y; }, [](const Tensor& x, const Tensor& y) { return kindle::lt(x, y); });
}
bool operator<=(const Num& a, const Num& b) {
  return Num::compare(a, b, [](double x, double y) { return x <= y; }, [](const Tensor& x, const Tensor& y) { return kindle::le(x, y); });
}
bool operator>(const Num& a, const Num& b) { return b < a; }
bool operator>=(const Num& a, const Num& b) { return b <= a; }
Num abs(const Num& a) { return a.is_tensor() ? Num(a.tensor().abs()) : Num(std::fabs(a.value())); }
// Python's min / max: the first argument unless the second is strictly smaller / larger.
Num py_min(const Num& a, const Num& b) { return b < a ? b : a; }
Num py_max(const Num& a, const Num& b) { return b > a ? b : a; }

Tensor contiguous_clone(const Tensor& x) { return x.is_contiguous() ? x.clone() : x.contiguous(); }

Num cubic_interpolate(const Num& x1, const Num& f1, const Num& g1, const Num& x2, const Num& f2, const Num& g2,
                      const std::optional<std::pair<Num, Num>>& bounds = std::nullopt) {
  Num lo, hi;
  if (bounds) std::tie(lo, hi) = *bounds;
  else if (x1 <= x2) std::tie(lo, hi) = std::make_pair(x1, x2);
  else std::tie(lo, hi) = std::make_pair(x2, x1);
  Num d1 = g1 + g2 - Num(3.0) * (f1 - f2) / (x1 - x2);
  Num d2_square = (d1.is_tensor() ? Num(d1.tensor().pow(2)) : Num(d1.value() * d1.value())) - g1 * g2;
  if (d2_square >= Num(0.0)) {
    Num d2 = d2_square.is_tensor() ? Num(d2_square.tensor().sqrt()) : Num(std::sqrt(d2_square.value()));
    Num min_pos = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + Num(2.0) * d2))
                           : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + Num(2.0) * d2));
    return py_min(py_max(min_pos, lo), hi);
  }
  return (lo + hi) / Num(2.0);
}

struct Params {
  std::vector<Tensor>& params;
  int64_t numel() const {
    int64_t n = 0;
    for (const Tensor& p : params) n += p.numel();
    return n;
  }
  Tensor flat_grad() const {
    std::vector<Tensor> views;
    for (const Tensor& p : params)
      views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.dtype(), p.device()));
    return cat(views, 0);
  }
  void add(const Num& step, const Tensor& update) const {
    int64_t offset = 0;
    for (const Tensor& p : params) {
      int64_t n = p.numel();
      p.add_(update.slice(0, offset, offset + n).view(p.sizes()), step.value());
      offset += n;
    }
  }
  std::vector<Tensor> clone() const {
    std::vector<Tensor> out;
    for (const Tensor& p : params) out.push_back(contiguous_clone(p));
    return out;
  }
  void set(const std::vector<Tensor>& data) const {
    for (size_t i = 0; i < params.size(); ++i) params[i].copy_(data[i]);
  }
};

struct SearchResult {
  double f;
  Tensor g;
  Num t;
  int64_t evals;
};

// obj(t): the loss and flat gradient at x + t d (the parameters are restored after).
SearchResult strong_wolfe(const std::function<std::pair<double, Tensor>(const Num&)>& obj, Num t, const Tensor& d,
                          double f, Tensor g, const Num& gtd, int64_t max_ls, double c1 = 1e-4, double c2 = 0.9,
                          double tolerance_change = 1e-9) {
  Num d_norm(d.abs().max());
  g = contiguous_clone(g);
  auto [f_new, g_new] = obj(t);
  int64_t evals = 1;
  Num gtd_new(g_new.dot(d));

  // Bracket an interval containing a point satisfying the Wolfe criteria.
  Num t_prev(0.0), gtd_prev = gtd;
  double f_prev = f;
  Tensor g_prev = g;
  bool done = false;
  int64_t ls_iter = 0;
  std::vector<Num> bracket, bracket_gtd;
  std::vector<double> bracket_f;
  std::vector<Tensor> bracket_g;
  while (ls_iter < max_ls) {
    if (Num(f_new) > Num(f) + Num(c1) * t * gtd || (ls_iter > 1 && f_new >= f_prev)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, contiguous_clone(g_new)};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    if (abs(gtd_new) <= Num(-c2) * gtd) {
      bracket = {t}, bracket_f = {f_new}, bracket_g = {g_new};
      done = true;
      break;
    }
    if (gtd_new >= Num(0.0)) {
      bracket = {t_prev, t}, bracket_f = {f_prev, f_new}, bracket_g = {g_prev, contiguous_clone(g_new)};
      bracket_gtd = {gtd_prev, gtd_new};
      break;
    }
    Num min_step = t + Num(0.01) * (t - t_prev), max_step = t * Num(10.0), tmp = t;
    t = cubic_interpolate(t_prev, Num(f_prev), gtd_prev, t, Num(f_new), gtd_new, std::make_pair(min_step, max_step));
    t_prev = tmp, f_prev = f_new, g_prev = contiguous_clone(g_new), gtd_prev = gtd_new;
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = Num(g_new.dot(d));
    ++ls_iter;
  }
  if (ls_iter == max_ls) bracket = {Num(0.0), t}, bracket_f = {f, f_new}, bracket_g = {g, g_new};

  // Zoom: shrink the bracket until a point satisfies the criteria.
  bool insuf_progress = false;
  size_t low = bracket_f.front() <= bracket_f.back() ? 0 : 1, high = 1 - low;
  while (!done && ls_iter < max_ls) {
    if (abs(bracket[1] - bracket[0]) * d_norm < Num(tolerance_change)) break;
    t = cubic_interpolate(bracket[0], Num(bracket_f[0]), bracket_gtd[0], bracket[1], Num(bracket_f[1]), bracket_gtd[1]);
    // A point too close to the bracket's ends makes little progress: move it inwards.
    Num bmax = py_max(bracket[0], bracket[1]), bmin = py_min(bracket[0], bracket[1]);
    Num eps = Num(0.1) * (bmax - bmin);
    if (py_min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = abs(t - bmax) < abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    std::tie(f_new, g_new) = obj(t);
    ++evals;
    gtd_new = Num(g_new.dot(d));
    ++ls_iter;
    if (Num(f_new) > Num(f) + Num(c1) * t * gtd || f_new >= bracket_f[low]) {
      bracket[high] = t, bracket_f[high] = f_new, bracket_g[high] = contiguous_clone(g_new);
      bracket_gtd[high] = gtd_new;
      low = bracket_f[0] <= bracket_f[1] ? 0 : 1, high = 1 - low;
    } else {
      if (abs(gtd_new) <= Num(-c2) * gtd) {
        done = true;
      } else if (gtd_new * (bracket[high] - bracket[low]) >= Num(0.0)) {
        bracket[high] = bracket[low], bracket_f[high] = bracket_f[low], bracket_g[high] = bracket_g[low];
        bracket_gtd[high] = bracket_gtd[low];
      }
      bracket[low] = t, bracket_f[low] = f_new, bracket_g[low] = contiguous_clone(g_new);
      bracket_gtd[low] = gtd_new;
    }
  }
  return {bracket_f[low], bracket_g[low], bracket[low], evals};
}

bool below(const Tensor& t, double bound) { return (t <= bound).item<bool>(); }

}  // namespace

Tensor lbfgs_step(std::vector<Tensor>& params, LBFGSState& state, const LBFGSHyper& h,
                  const std::function<Tensor()>& closure) {
  KINDLE_CHECK(bool(closure), "LBFGS requires a closure that reevaluates the model and returns the loss");
  KINDLE_CHECK(!h.line_search_fn || *h.line_search_fn == "strong_wolfe",
               "LBFGS: only 'strong_wolfe' is supported (line_search_fn='", *h.line_search_fn, "')");
  autograd::AutoGradMode no_grad(false);
  auto evaluate = [&] {
    autograd::AutoGradMode with_grad(true);
    return closure();
  };
  Params ps{params};
  const int64_t max_eval = h.max_eval ? *h.max_eval : h.max_iter * 5 / 4;

  Tensor orig_loss = evaluate();
  double loss = orig_loss.item<double>();
  int64_t current_evals = 1;
  state.func_evals += 1;
  Tensor flat_grad = ps.flat_grad();
  if (below(flat_grad.abs().max(), h.tolerance_grad)) return orig_loss;  // already optimal

  Tensor d = state.d;
  Num t = state.t.defined() ? Num(state.t) : Num(0.0);  // (set before its first use)
  Num H_diag = state.H_diag.defined() ? Num(state.H_diag) : Num(1.0);
  Tensor prev_flat_grad = state.prev_flat_grad;
  double prev_loss = state.prev_loss.value_or(0.0);
  int64_t n_iter = 0;
  while (n_iter < h.max_iter) {
    ++n_iter;
    ++state.n_iter;
    // The descent direction.
    if (state.n_iter == 1) {
      d = flat_grad.neg();
      state.old_dirs.clear(), state.old_stps.clear(), state.ro.clear();
      H_diag = Num(1.0);
    } else {
      // Update the memory with the last step (skipped when y.s is not positive).
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor s = d.mul(t.tensor());
      Tensor ys = y.dot(s);
      if (Num(ys) > Num(1e-10)) {
        if (int64_t(state.old_dirs.size()) == h.history_size) {
          state.old_dirs.erase(state.old_dirs.begin());
          state.old_stps.erase(state.old_stps.begin());
          state.ro.erase(state.ro.begin());
        }
        state.old_dirs.push_back(y);
        state.old_stps.push_back(s);
        state.ro.push_back((Num(1.0) / Num(ys)).tensor());
        H_diag = Num(ys) / Num(y.dot(y));
      }
      // The two-loop recursion: d = -H g.
      const size_t num_old = state.old_dirs.size();
      if (state.al.empty()) state.al.assign(size_t(h.history_size), Tensor());
      std::vector<Tensor>& al = state.al;
      Tensor q = flat_grad.neg();
      for (size_t k = num_old; k-- > 0;) {
        al[k] = state.old_stps[k].dot(q) * state.ro[k];
        q.add_(state.old_dirs[k], kindle::neg(al[k]).item<double>());  // alpha as a number, as PyTorch passes it
      }
      Tensor r = q * H_diag.tensor();
      d = r;
      for (size_t k = 0; k < num_old; ++k) {
        Tensor be = state.old_dirs[k].dot(r) * state.ro[k];
        r.add_(state.old_stps[k], kindle::sub(al[k], be).item<double>());
      }
    }
    if (!prev_flat_grad.defined()) prev_flat_grad = contiguous_clone(flat_grad);
    else prev_flat_grad.copy_(flat_grad);
    prev_loss = loss;

    // The step length: the first iteration scales by the gradient's size.
    t = state.n_iter == 1 ? py_min(Num(1.0), Num(1.0) / Num(flat_grad.abs().sum())) * Num(h.lr) : Num(h.lr);
    Num gtd(flat_grad.dot(d));
    if (gtd > Num(-h.tolerance_change)) break;  // not a descent direction

    int64_t ls_func_evals = 0;
    bool opt_cond = false;
    if (h.line_search_fn) {
      std::vector<Tensor> x_init = ps.clone();
      auto obj = [&](const Num& step) {
        ps.add(step, d);
        double l = evaluate().item<double>();
        Tensor g = ps.flat_grad();
        ps.set(x_init);
        return std::make_pair(l, g);
      };
      SearchResult r = strong_wolfe(obj, t, d, loss, flat_grad, gtd, max_eval - current_evals);
      loss = r.f, flat_grad = r.g, t = r.t, ls_func_evals = r.evals;
      ps.add(t, d);
      opt_cond = below(flat_grad.abs().max(), h.tolerance_grad);
    } else {
      // A fixed step; re-evaluate unless this is the last iteration.
      ps.add(t, d);
      if (n_iter != h.max_iter) {
        loss = evaluate().item<double>();
        flat_grad = ps.flat_grad();
        opt_cond = below(flat_grad.abs().max(), h.tolerance_grad);
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    state.func_evals += ls_func_evals;
    if (n_iter == h.max_iter || current_evals >= max_eval || opt_cond) break;
    if (below(d.mul(t.tensor()).abs().max(), h.tolerance_change)) break;  // lack of progress
    if (std::fabs(loss - prev_loss) < h.tolerance_change) break;
  }
  state.d = d;
  state.t = t.tensor();  // a Python number stays a wrapped-number tensor
  state.H_diag = H_diag.tensor();
  state.prev_flat_grad = prev_flat_grad;
  state.prev_loss = prev_loss;
  return orig_loss;
}

}  // namespace kindle::optim
