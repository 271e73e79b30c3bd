// Saved tensors from Python: torch.autograd.graph.saved_tensors_hooks (the pack/unpack pair
// installed on this thread) and a node's grad_fn._saved_<name> / _raw_saved_<name>.
#include <nanobind/stl/shared_ptr.h>

#include "autograd/functions.h"
#include "python/bind_common.h"

namespace kindle::python {

using namespace autograd;

namespace {

// Drops Python references safely from wherever a graph is freed: a backward that released the
// GIL, or a thread's exit after the interpreter is gone (then they are leaked, not touched).
void release_safely(std::initializer_list<nb::object*> objs) {
  if (!Py_IsInitialized()) {
    for (nb::object* o : objs) (void)o->release();
    return;
  }
  nb::gil_scoped_acquire gil;
  for (nb::object* o : objs) o->reset();
}

// The pair of Python hooks one saved_tensors_hooks context installed.
struct PyHookPair {
  nb::object pack_fn, unpack_fn;
  PyHookPair(nb::object p, nb::object u) : pack_fn(std::move(p)), unpack_fn(std::move(u)) {}
  ~PyHookPair() { release_safely({&pack_fn, &unpack_fn}); }
};

// One saved tensor's hooks and what pack returned for it.
struct PySavedTensorHooks final : SavedTensorHooks {
  std::shared_ptr<PyHookPair> fns;
  nb::object packed;
  explicit PySavedTensorHooks(std::shared_ptr<PyHookPair> f) : fns(std::move(f)) {}
  ~PySavedTensorHooks() override { release_safely({&packed}); }
  void pack(const Tensor& t) override {
    nb::gil_scoped_acquire gil;
    packed = fns->pack_fn(t);
  }
  Tensor unpack() override {
    nb::gil_scoped_acquire gil;
    nb::object r = fns->unpack_fn(packed);
    KINDLE_CHECK_TYPE(nb::isinstance<Tensor>(r), "Output of saved tensor unpack_hook expected to be a Tensor but got "
                      "result of type ", nb::inst_name(r).c_str());
    return nb::cast<Tensor>(r);
  }
};

void check_callable(nb::handle f, const char* what) {
  KINDLE_CHECK_TYPE(PyCallable_Check(f.ptr()), "saved_tensors_hooks: the ", what, " hook must be callable, got ",
                    nb::inst_name(f).c_str());
}

std::shared_ptr<PyHookPair> hook_pair(nb::object pack, nb::object unpack) {
  check_callable(pack, "pack");
  check_callable(unpack, "unpack");
  return std::make_shared<PyHookPair>(std::move(pack), std::move(unpack));
}

// grad_fn._raw_saved_<name>: a handle on one saved variable that keeps its node alive.
struct RawSavedTensor {
  std::shared_ptr<Node> node;
  SavedVariable* var;
};

nb::object unpack_ref(const std::shared_ptr<Node>& node, const SavedVariableRef& ref) {
  auto one = [&](SavedVariable* v) -> nb::object {
    Tensor t = v->unpack(node.get());
    return t.defined() ? nb::cast(t) : nb::none();
  };
  if (!ref.is_list) return one(ref.vars[0]);
  nb::list l;
  for (SavedVariable* v : ref.vars) l.append(one(v));
  return nb::tuple(l);
}

}  // namespace

void bind_saved_tensors(nb::module_& m) {
  m.def("_push_saved_tensors_hooks", [](nb::object pack, nb::object unpack) {
    push_saved_tensors_hooks([fns = hook_pair(pack, unpack)] { return std::make_unique<PySavedTensorHooks>(fns); });
  }, nb::arg("pack_hook"), nb::arg("unpack_hook"));
  m.def("_pop_saved_tensors_hooks", &pop_saved_tensors_hooks);
  // Returns the previous message (None: hooks were enabled).
  m.def("_saved_tensors_hooks_set_disabled", [](std::optional<std::string> message) -> nb::object {
    std::string prev = set_saved_tensors_hooks_disabled(message.value_or(""));
    return prev.empty() ? nb::none() : nb::cast(prev);
  }, nb::arg("message").none());

  nb::class_<RawSavedTensor>(m, "SavedTensor")
      .def("register_hooks", [](RawSavedTensor& s, nb::object pack, nb::object unpack) {
        s.var->register_hooks(std::make_unique<PySavedTensorHooks>(hook_pair(pack, unpack)));
      }, nb::arg("pack_hook"), nb::arg("unpack_hook"));

  // torch names what a node saved after the op's arguments (grad_fn._saved_self, _saved_other)
  // and its output (_saved_result).
  nb::type<Node>().attr("__getattr__") = nb::cpp_function(
      [](nb::handle self, const std::string& attr) -> nb::object {
        auto node = nb::cast<std::shared_ptr<Node>>(self);
        auto lookup = [&](std::string_view prefix) -> SavedVariableRef {
          if (!std::string_view(attr).starts_with(prefix)) return {};
          return node->saved_variable(std::string_view(attr).substr(prefix.size()));
        };
        if (SavedVariableRef r = lookup("_raw_saved_"); r.found()) {
          if (!r.is_list) return nb::cast(RawSavedTensor{node, r.vars[0]});
          nb::list l;
          for (SavedVariable* v : r.vars) l.append(nb::cast(RawSavedTensor{node, v}));
          return nb::tuple(l);
        }
        if (SavedVariableRef r = lookup("_saved_"); r.found()) return unpack_ref(node, r);
        if (attr == "variable")  // AccumulateGrad's leaf, as torch's
          if (auto* acc = dynamic_cast<AccumulateGrad*>(node.get())) return nb::cast(acc->variable);
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'", node->name().c_str(), attr.c_str());
        throw nb::python_error();
      },
      nb::is_method());
}

}  // namespace kindle::python
