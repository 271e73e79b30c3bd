// __torch_function__ (PyTorch's Python-level override protocol) in the bindings.
//
// A binding that takes tensors first asks torch_function_hint(): a single load, false until a
// program defines a Tensor subclass that overrides, passes an object defining
// __torch_function__, or enters a TorchFunctionMode. Then it checks its tensor arguments' Python
// objects (override_in; list arguments item by item) and, when one overrides and overriding is
// not disabled, rebuilds the call from its arguments (TorchFunctionCall) and returns what
// kindle.overrides._dispatch returns: the modes and the types' __torch_function__ in PyTorch's
// order. Tensor arguments reach the bindings as TensorArg / TensorListArg, which keep the
// Python object they came from.
#pragma once
#include <initializer_list>

#include <nanobind/nanobind.h>

namespace kindle::python {

namespace nb = nanobind;

struct TorchFunctionState {
  bool hint = false;          // an override is possible at all (see above): sticky || scoped || modes
  bool sticky = false;        // a subclass or duck type that overrides has been seen
  int scoped = 0;             // overriding types live only inside these scopes (vmap's BatchedTensor)
  int mode_depth = 0;         // TorchFunctionModes entered (kindle.overrides keeps the stack)
  int disabled_subclass = 0;  // DisableTorchFunctionSubclass: subclasses and duck types run as tensors
  int disabled_all = 0;       // DisableTorchFunction: modes too
};
extern TorchFunctionState g_torch_function;
inline void update_torch_function_hint() {
  TorchFunctionState& s = g_torch_function;
  s.hint = s.sticky || s.scoped > 0 || s.mode_depth > 0;
}
inline bool torch_function_hint() { return g_torch_function.hint; }

// Must a call with these argument objects go to __torch_function__ (an active mode, or an
// overriding object among them or in a list among them), overriding being enabled?
bool override_in(std::initializer_list<PyObject*> objs);

// A call rebuilt for __torch_function__ as func(*positional, **keywords).
struct TorchFunctionCall {
  nb::list positional;
  nb::dict keywords;
  void arg(nb::handle h) { positional.append(h); }
  void spread(nb::handle tuple);  // the items of an *args tuple
  void kwarg(const char* name, nb::handle h) { keywords[name] = h; }
  void out(nb::handle h) { if (!h.is_none()) keywords["out"] = h; }
  nb::object dispatch(nb::handle func);  // kindle.overrides._dispatch(func, args, kwargs)
};

// The function objects handed to __torch_function__, looked up once by name: the bindings
// kindle._C.<name> (which kindle.<name> is), kindle._C._nn.<name>, kindle.Tensor.<name>.
nb::handle torch_function_target(char where, const char* name);
nb::handle torch_function_dispatcher();  // kindle.overrides._dispatch

void bind_torch_function(nb::module_& m);

}  // namespace kindle::python

// The first statement of a hand-written binding whose arguments are all positional Python
// objects: hand the call to __torch_function__ when it must go there.
#define KINDLE_TORCH_FUNCTION(where, name, ...)                                                              \
  do {                                                                                                       \
    if (::kindle::python::torch_function_hint()) [[unlikely]] {                                              \
      if (::kindle::python::override_in({__VA_ARGS__})) {                                                    \
        ::kindle::python::TorchFunctionCall call_;                                                           \
        for (PyObject* o_ : {__VA_ARGS__}) call_.arg(nb::handle(o_));                                        \
        return call_.dispatch(::kindle::python::torch_function_target(where, name));                         \
      }                                                                                                      \
    }                                                                                                        \
  } while (0)
