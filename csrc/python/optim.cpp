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
}

}  // namespace kindle::python
