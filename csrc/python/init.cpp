// kindle._C._init: nn::init (csrc/nn/init.cpp) for kindle.nn.init, which adds only Python's
// warnings and argument checks, so both front ends draw the same weights by one implementation.
#include "kindle/nn/init.h"
#include "python/bind_common.h"

#include <nanobind/stl/pair.h>

namespace kindle::python {

void bind_init(nb::module_& m) {
  namespace init = kindle::nn::init;
  nb::module_ i = m.def_submodule("_init", "torch.nn.init's rules and draws");
  using Gen = std::optional<Generator>;
  i.def("calculate_gain", [](const std::string& nonlinearity, std::optional<double> param) -> nb::object {
    double g = init::calculate_gain(nonlinearity, param);
    // torch returns the int 1 for the linear family (and a float from leaky_relu's formula)
    if (g == 1 && nonlinearity != "leaky_relu") return nb::int_(1);
    return nb::float_(g);
  }, nb::arg("nonlinearity"), nb::arg("param").none() = nb::none());
  i.def("calculate_fan_in_and_fan_out", &init::calculate_fan_in_and_fan_out, nb::arg("tensor"));
  i.def("calculate_correct_fan", [](const Tensor& t, const std::string& mode) {
    return init::calculate_correct_fan(t, mode);
  }, nb::arg("tensor"), nb::arg("mode"));
  // In place: the Python functions return their own argument (the same object).
  i.def("uniform_", [](const Tensor& t, double a, double b, const Gen& g) { init::uniform_(t, a, b, g); },
        nb::arg("tensor"), nb::arg("a"), nb::arg("b"), nb::arg("generator").none());
  i.def("normal_", [](const Tensor& t, double mean, double std, const Gen& g) { init::normal_(t, mean, std, g); },
        nb::arg("tensor"), nb::arg("mean"), nb::arg("std"), nb::arg("generator").none());
  i.def("trunc_normal_", [](const Tensor& t, double mean, double std, double a, double b, const Gen& g) {
    init::trunc_normal_(t, mean, std, a, b, g);
  }, nb::arg("tensor"), nb::arg("mean"), nb::arg("std"), nb::arg("a"), nb::arg("b"), nb::arg("generator").none());
  i.def("eye_", [](const Tensor& t) { init::eye_(t); }, nb::arg("tensor"));
  i.def("xavier_uniform_", [](const Tensor& t, double gain, const Gen& g) { init::xavier_uniform_(t, gain, g); },
        nb::arg("tensor"), nb::arg("gain"), nb::arg("generator").none());
  i.def("xavier_normal_", [](const Tensor& t, double gain, const Gen& g) { init::xavier_normal_(t, gain, g); },
        nb::arg("tensor"), nb::arg("gain"), nb::arg("generator").none());
  i.def("kaiming_uniform_", [](const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                               const Gen& g) { init::kaiming_uniform_(t, a, mode, nonlinearity, g); },
        nb::arg("tensor"), nb::arg("a"), nb::arg("mode"), nb::arg("nonlinearity"), nb::arg("generator").none());
  i.def("kaiming_normal_", [](const Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                              const Gen& g) { init::kaiming_normal_(t, a, mode, nonlinearity, g); },
        nb::arg("tensor"), nb::arg("a"), nb::arg("mode"), nb::arg("nonlinearity"), nb::arg("generator").none());
}

}  // namespace kindle::python
