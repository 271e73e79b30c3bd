// kindle._C._optim: the fused optimizer steps behind kindle.optim (see kindle/optim.h).
#include "kindle/optim.h"
#include "python/bind_common.h"

namespace kindle::python {
namespace {

std::vector<Tensor> tensors_or_undefined(const nb::list& l) {
  std::vector<Tensor> r;
  for (nb::handle h : l) r.push_back(h.is_none() ? Tensor() : nb::cast<Tensor>(h));
  return r;
}

// LBFGS's state entries (torch's names) <-> LBFGSState: a Python number is a wrapped-number
// tensor there, None an undefined tensor.
Tensor state_tensor(const nb::dict& st, const char* key) {
  if (!st.contains(key)) return {};
  nb::object v = st[key];
  if (v.is_none()) return {};
  if (nb::isinstance<Tensor>(v)) return nb::cast<Tensor>(v);
  return scalar_to_tensor(nb::cast<double>(v));
}

std::vector<Tensor> state_list(const nb::dict& st, const char* key) {
  return st.contains(key) && !st[key].is_none() ? tensors_or_undefined(nb::borrow<nb::list>(st[key]))
                                                 : std::vector<Tensor>{};
}

nb::object number_or_tensor(const Tensor& t) {
  if (!t.defined()) return nb::none();
  if (t.impl()->wrapped_number) return nb::float_(t.item<double>());
  return nb::cast(t);
}

nb::list to_list(const std::vector<Tensor>& v) {
  nb::list l;
  for (const Tensor& t : v) l.append(number_or_tensor(t));
  return l;
}

}  // namespace

void bind_optim(nb::module_& m) {
  nb::module_ o = m.def_submodule("_optim", "Fused optimizer steps");
  o.def("sgd_step", [](std::vector<Tensor> params, std::vector<Tensor> grads, nb::list bufs, double lr, double momentum,
                       double dampening, double weight_decay, bool nesterov, bool maximize) {
    std::vector<Tensor> b = tensors_or_undefined(bufs);
    optim::sgd_step(params, grads, b, {lr, momentum, dampening, weight_decay, nesterov, maximize});
    nb::list out;
    for (auto& t : b) out.append(t.defined() ? nb::cast(t) : nb::none());
    return out;
  }, nb::arg("params"), nb::arg("grads"), nb::arg("momentum_buffers"), nb::arg("lr"), nb::arg("momentum"),
     nb::arg("dampening"), nb::arg("weight_decay"), nb::arg("nesterov"), nb::arg("maximize"));
  o.def("adam_step", [](std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> exp_avgs,
                        std::vector<Tensor> exp_avg_sqs, std::vector<Tensor> max_exp_avg_sqs, std::vector<int64_t> steps,
                        double lr, double beta1, double beta2, double eps, double weight_decay, bool amsgrad,
                        bool maximize, bool decoupled) {
    optim::adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps,
                     {lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled});
  }, nb::arg("params"), nb::arg("grads"), nb::arg("exp_avgs"), nb::arg("exp_avg_sqs"), nb::arg("max_exp_avg_sqs"),
     nb::arg("steps"), nb::arg("lr"), nb::arg("beta1"), nb::arg("beta2"), nb::arg("eps"), nb::arg("weight_decay"),
     nb::arg("amsgrad"), nb::arg("maximize"), nb::arg("decoupled_weight_decay"));
  o.def("rmsprop_step", [](std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> square_avgs,
                           std::vector<Tensor> grad_avgs, std::vector<Tensor> momentum_buffers, double lr, double alpha,
                           double eps, double weight_decay, double momentum, bool centered, bool maximize) {
    optim::rmsprop_step(params, grads, square_avgs, grad_avgs, momentum_buffers,
                        {lr, alpha, eps, weight_decay, momentum, centered, maximize});
  }, nb::arg("params"), nb::arg("grads"), nb::arg("square_avgs"), nb::arg("grad_avgs"), nb::arg("momentum_buffers"),
     nb::arg("lr"), nb::arg("alpha"), nb::arg("eps"), nb::arg("weight_decay"), nb::arg("momentum"),
     nb::arg("centered"), nb::arg("maximize"));
  o.def("adagrad_step", [](std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> state_sums,
                           std::vector<int64_t> steps, double lr, double lr_decay, double weight_decay, double eps,
                           bool maximize) {
    optim::adagrad_step(params, grads, state_sums, steps, {lr, lr_decay, weight_decay, eps, maximize});
  }, nb::arg("params"), nb::arg("grads"), nb::arg("state_sums"), nb::arg("steps"), nb::arg("lr"),
     nb::arg("lr_decay"), nb::arg("weight_decay"), nb::arg("eps"), nb::arg("maximize"));
  // One LBFGS.step(closure): the algorithm in C++ (csrc/optim/lbfgs.cpp), its state in the
  // optimizer's Python dict; returns what the closure returned first.
  o.def("lbfgs_step", [](std::vector<Tensor> params, nb::callable closure, nb::dict state, double lr, int64_t max_iter,
                         int64_t max_eval, double tolerance_grad, double tolerance_change, int64_t history_size,
                         std::optional<std::string> line_search_fn) {
    optim::LBFGSState st;
    st.func_evals = state.contains("func_evals") ? nb::cast<int64_t>(state["func_evals"]) : 0;
    st.n_iter = state.contains("n_iter") ? nb::cast<int64_t>(state["n_iter"]) : 0;
    st.d = state_tensor(state, "d");
    st.t = state_tensor(state, "t");
    st.H_diag = state_tensor(state, "H_diag");
    st.prev_flat_grad = state_tensor(state, "prev_flat_grad");
    if (state.contains("prev_loss") && !state["prev_loss"].is_none()) st.prev_loss = nb::cast<double>(state["prev_loss"]);
    st.old_dirs = state_list(state, "old_dirs");
    st.old_stps = state_list(state, "old_stps");
    st.ro = state_list(state, "ro");
    st.al = state_list(state, "al");
    optim::LBFGSHyper h{lr, tolerance_grad, tolerance_change, max_iter, history_size, max_eval, line_search_fn};
    nb::object first;
    auto evaluate = [&]() -> Tensor {
      nb::object r = closure();
      if (!first.is_valid()) first = r;
      if (nb::isinstance<Tensor>(r)) return nb::cast<Tensor>(r);
      return scalar_to_tensor(nb::cast<double>(nb::float_(r)));
    };
    optim::lbfgs_step(params, st, h, evaluate);
    state["func_evals"] = st.func_evals;
    state["n_iter"] = st.n_iter;
    if (st.n_iter > 0) {  // (an already optimal first call leaves only the counters, as torch)
      state["d"] = number_or_tensor(st.d);
      state["t"] = number_or_tensor(st.t);
      state["old_dirs"] = to_list(st.old_dirs);
      state["old_stps"] = to_list(st.old_stps);
      state["ro"] = to_list(st.ro);
      state["H_diag"] = number_or_tensor(st.H_diag);
      state["prev_flat_grad"] = number_or_tensor(st.prev_flat_grad);
      state["prev_loss"] = st.prev_loss ? nb::object(nb::float_(*st.prev_loss)) : nb::none();
      if (!st.al.empty()) state["al"] = to_list(st.al);
    }
    return first;
  }, nb::arg("params"), nb::arg("closure"), nb::arg("state"), nb::arg("lr"), nb::arg("max_iter"), nb::arg("max_eval"),
     nb::arg("tolerance_grad"), nb::arg("tolerance_change"), nb::arg("history_size"),
     nb::arg("line_search_fn").none());
}

}  // namespace kindle::python
