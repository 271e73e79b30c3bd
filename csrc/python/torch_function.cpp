// __torch_function__ in the bindings (torch_function.h): the check for overriding arguments, the
// hand-off to kindle.overrides._dispatch, and the switches kindle.overrides flips.
#include "python/torch_function.h"

#include <string>
#include <unordered_map>

#include "kindle/tensor.h"
#include "python/bind_common.h"

namespace kindle::python {

TorchFunctionState g_torch_function;

namespace {

PyTypeObject* tensor_type() {
  static PyTypeObject* t = reinterpret_cast<PyTypeObject*>(nb::type<Tensor>().ptr());
  return t;
}

// kindle._C._disabled_torch_function_impl: the value of __torch_function__ on Tensor subclasses
// that opt out (nn.Parameter, nn.Buffer), as in PyTorch.
PyObject* g_disabled_impl = nullptr;
PyObject* g_name = nullptr;  // the interned string "__torch_function__"

bool has_torch_function_type(PyTypeObject* t) {
  PyObject* impl = _PyType_Lookup(t, g_name);  // borrowed; served from the type attribute cache
  if (!impl) return false;
  if (PyType_IsSubtype(t, tensor_type())) return impl != g_disabled_impl;
  return true;
}

bool is_plain_value(PyObject* o) {
  return o == Py_None || PyLong_CheckExact(o) || PyFloat_CheckExact(o) || PyBool_Check(o) || PyUnicode_CheckExact(o);
}

bool scan_object(PyObject* o, int depth) {
  PyTypeObject* t = Py_TYPE(o);
  if (t == tensor_type() || is_plain_value(o)) return false;
  if ((PyList_CheckExact(o) || PyTuple_CheckExact(o)) && depth < 2) {  // a list, or a list in *args
    PyObject** items = PySequence_Fast_ITEMS(o);
    for (Py_ssize_t i = 0, n = PySequence_Fast_GET_SIZE(o); i < n; ++i)
      if (scan_object(items[i], depth + 1)) return true;
    return false;
  }
  return has_torch_function_type(t);
}

}  // namespace

bool accept_torch_function_object(PyObject* o) {
  if (g_torch_function.disabled_subclass || g_torch_function.disabled_all || !g_name) return false;
  if (is_plain_value(o) || PyType_IsSubtype(Py_TYPE(o), tensor_type()) || !has_torch_function_type(Py_TYPE(o)))
    return false;
  g_torch_function.sticky = true;
  update_torch_function_hint();
  return true;
}

bool override_in(std::initializer_list<PyObject*> objs) {
  const TorchFunctionState& s = g_torch_function;
  if (s.disabled_all) return false;
  if (s.mode_depth > 0) return true;
  if (s.disabled_subclass) return false;
  for (PyObject* o : objs)
    if (o && scan_object(o, 0)) return true;
  return false;
}

void TorchFunctionCall::spread(nb::handle tuple) {
  for (nb::handle item : nb::borrow<nb::tuple>(tuple)) positional.append(item);
}

nb::object TorchFunctionCall::dispatch(nb::handle func) {
  return torch_function_dispatcher()(func, nb::tuple(positional), keywords);
}

nb::handle torch_function_dispatcher() {
  // kept for the process (a static nb::object would be released after the interpreter is gone)
  static nb::handle dispatch = nb::object(nb::module_::import_("kindle.overrides").attr("_dispatch")).release();
  return dispatch;
}

nb::handle torch_function_target(char where, const char* name) {
  static auto& cache = *new std::unordered_map<std::string, nb::handle>;  // references kept for the process
  std::string key = std::string(1, where) + name;
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  // The binding itself (kindle.add is kindle._C.add): a Python wrapper of the same name
  // (kindle.nn.functional.cross_entropy over _C._nn.cross_entropy) may take other arguments.
  nb::object target;
  if (where == 'm') {
    target = nb::module_::import_("kindle._C").attr(name);
  } else if (where == 'n') {
    target = nb::module_::import_("kindle._C").attr("_nn").attr(name);
  } else {
    target = nb::borrow(nb::handle(reinterpret_cast<PyObject*>(tensor_type()))).attr(name);
  }
  return cache.emplace(key, target.release()).first->second;
}

void bind_torch_function(nb::module_& m) {
  g_name = PyUnicode_InternFromString("__torch_function__");
  // kindle.overrides defines _disabled_torch_function_impl (a plain function: looked up on a
  // class it is itself, so the scan compares identities) and registers it here.
  m.def("_set_disabled_torch_function_impl", [](nb::handle f) {
    Py_XDECREF(g_disabled_impl);
    g_disabled_impl = f.inc_ref().ptr();
  });
  // The switches kindle.overrides flips (its context managers and mode stack).
  m.def("_torch_function_hint", [](bool on) {
    g_torch_function.sticky = g_torch_function.sticky || on;
    update_torch_function_hint();
  });
  // An overriding type whose instances exist only inside a scope (vmap's BatchedTensor): the
  // bindings look for overrides only while one is open, so programs pay nothing after it.
  m.def("_torch_function_scoped_hint", [](int delta) {
    g_torch_function.scoped += delta;
    update_torch_function_hint();
  });
  m.def("_torch_function_mode_depth", [](int delta) {
    g_torch_function.mode_depth += delta;
    update_torch_function_hint();
    return g_torch_function.mode_depth;
  });
  m.def("_torch_function_disable", [](bool subclass_only, int delta) {
    int& d = subclass_only ? g_torch_function.disabled_subclass : g_torch_function.disabled_all;
    d += delta;
    return d;
  });
  m.def("_is_torch_function_enabled", [] { return g_torch_function.disabled_all == 0; });
  m.def("_is_torch_function_mode_enabled", [] {
    return g_torch_function.disabled_all == 0 && g_torch_function.mode_depth > 0;
  });
  // For Python-level functions (kindle.nn.functional): must this call go to __torch_function__?
  m.def("_has_torch_function", [](nb::args args, nb::kwargs kwargs) {
    if (!g_torch_function.hint) return false;
    if (override_in({args.ptr()})) return true;
    for (auto [k, v] : kwargs)
      if (override_in({v.ptr()})) return true;
    return false;
  });
}

}  // namespace kindle::python
