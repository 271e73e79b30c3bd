// Python bindings of the autograd engine: Tensor's autograd attributes, graph nodes, backward,
// grad modes, anomaly mode and the C++ side of autograd.Function.
#include "autograd/forward_ad.h"
#include "kindle/autocast.h"
#include "kindle/profiler.h"
#include <nanobind/stl/function.h>
#include <nanobind/stl/shared_ptr.h>

#include "autograd/functions.h"
#include "python/bind_common.h"

namespace kindle::python {

using namespace autograd;

namespace {

Tensor tensor_or_undefined(nb::handle h) { return h.is_none() ? Tensor() : nb::cast<Tensor>(h); }
nb::object tensor_or_none(const Tensor& t) { return t.defined() ? nb::cast(t) : nb::none(); }

tensor_list to_tensors(nb::handle seq) {
  tensor_list out;
  if (seq.is_none()) return out;
  for (nb::handle h : seq) out.push_back(tensor_or_undefined(h));
  return out;
}

std::vector<BackwardArg> to_backward_args(nb::handle seq) {
  std::vector<BackwardArg> out;
  if (seq.is_none()) return out;
  for (nb::handle h : seq) {
    if (h.is_none() || nb::isinstance<Tensor>(h)) {
      out.emplace_back(tensor_or_undefined(h));
      continue;
    }
    KINDLE_CHECK_TYPE(nb::isinstance<nb::tuple>(h) && nb::len(h) >= 2 && nb::isinstance<Node>(h[0]),
                      "autograd: expected a Tensor or a GradientEdge, got ", nb::inst_name(h).c_str());
    out.emplace_back(Edge{nb::cast<std::shared_ptr<Node>>(h[0]), nb::cast<uint32_t>(h[1])});
  }
  return out;
}

nb::tuple to_tuple(const tensor_list& ts) {
  nb::list l;
  for (const Tensor& t : ts) l.append(tensor_or_none(t));
  return nb::tuple(l);
}

// A Python tensor hook: returns None (keep) or a replacement gradient. A named type, so that the
// garbage collector's traversal (below) can find the Python function inside the std::function.
struct PyTensorHook {
  nb::object fn;
  Tensor operator()(const Tensor& g) const {
    nb::gil_scoped_acquire gil;
    nb::object r = fn(g);
    if (r.is_none()) return Tensor();
    KINDLE_CHECK_TYPE(nb::isinstance<Tensor>(r), "hook: a tensor hook must return None or a Tensor, got ",
                      nb::type_name(r.type()).c_str());
    return nb::cast<Tensor>(r);
  }
};
TensorHook make_tensor_hook(nb::object fn) { return PyTensorHook{std::move(fn)}; }

// The Python hooks a tensor owns alone: on its meta (leaf hooks) and on a grad_fn that nothing
// else holds. Only a tensor whose TensorImpl has no other owner reports them, so that two Python
// objects sharing one impl never both claim the same hook (the collector's counts must be exact).
template <typename F>
void for_each_owned_py_hook(const Tensor& t, F&& f) {
  if (!t.defined() || t.impl()->use_count() != 1) return;
  AutogradMeta* m = get_meta(t);
  if (!m) return;
  for (auto& h : m->leaf_hooks)
    if (auto* p = h.second.target<PyTensorHook>()) f(p->fn);
  if (m->grad_fn && m->grad_fn.use_count() == 1)
    for (auto& h : m->grad_fn->tensor_hooks)
      if (auto* p = h.fn.target<PyTensorHook>()) f(p->fn);
}

// `.grad` hands out one Python object per gradient while one is alive (p.grad is p.grad, and a
// gradient accumulated in place is the object read before), as torch's does. The table maps a
// gradient's TensorImpl to a weak reference to its object; the entry goes with the object, which
// keeps the TensorImpl alive, so an address in it is never a reused one.
std::unordered_map<const TensorImpl*, nb::weakref>& grad_objects() {
  static auto* table = new std::unordered_map<const TensorImpl*, nb::weakref>();  // outlives teardown
  return *table;
}

void remember_grad_object(nb::handle obj) {
  const TensorImpl* key = nb::inst_ptr<Tensor>(obj)->impl();
  nb::weakref ref(obj, nb::cpp_function([key](nb::handle dead) {
    auto& table = grad_objects();
    auto it = table.find(key);
    if (it != table.end() && it->second.is(dead)) table.erase(it);
  }));
  grad_objects().insert_or_assign(key, std::move(ref));
}

nb::object grad_object(const Tensor& g) {
  if (!g.defined()) return nb::none();
  auto& table = grad_objects();
  if (auto it = table.find(g.impl()); it != table.end()) {
    PyObject* o = PyWeakref_GetObject(it->second.ptr());
    if (o && o != Py_None && nb::inst_ptr<Tensor>(o)->impl() == g.impl()) return nb::borrow(o);
  }
  nb::object obj = nb::cast(g);
  remember_grad_object(obj);
  return obj;
}

struct HookHandle {
  Tensor tensor;
  std::shared_ptr<Node> node;
  uint64_t id;
  int kind;  // 0 tensor hook, 1 node post hook, 2 node pre hook, 3 post-accumulate-grad hook
  size_t index;
  void remove() {
    if (kind == 0 && tensor.defined()) tensor.remove_hook(id);
    if (kind == 3 && tensor.defined()) remove_post_accumulate_grad_hook(tensor, id);
    // Node hooks are replaced by no-ops: indices of later hooks stay valid.
    if (kind == 1 && node && index < node->post_hooks.size())
      node->post_hooks[index] = [](const tensor_list&, const tensor_list&) { return tensor_list(); };
    if (kind == 2 && node && index < node->pre_hooks.size())
      node->pre_hooks[index] = [](const tensor_list&) { return tensor_list(); };
  }
};

std::string format_python_stack() {
  nb::gil_scoped_acquire gil;
  nb::object tb = nb::module_::import_("traceback");
  nb::object lines = tb.attr("format_stack")();
  std::string out;
  for (nb::handle l : lines) out += nb::cast<std::string>(l);
  return out;
}

// The profiler's stacks: one "file(line): function" per frame, outermost first.
std::string compact_python_stack() {
  nb::gil_scoped_acquire gil;
  nb::object frames = nb::module_::import_("traceback").attr("extract_stack")();
  std::string out;
  for (nb::handle f : frames) {
    if (!out.empty()) out += "\n";
    out += nb::cast<std::string>(f.attr("filename")) + "(" + std::to_string(nb::cast<int>(f.attr("lineno"))) +
           "): " + nb::cast<std::string>(f.attr("name"));
  }
  return out;
}

}  // namespace

// Cyclic garbage collection of tensors: a hook that refers to its own tensor (p.register_hook(
// lambda g: g + p)) forms a cycle through C++ that Python can only break if it sees it.
int tensor_tp_traverse(PyObject* self, visitproc visit, void* arg) {
  Py_VISIT(Py_TYPE(self));
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_VISIT(*dict);
  if (!nb::inst_ready(self)) return 0;
  int rc = 0;
  for_each_owned_py_hook(*nb::inst_ptr<Tensor>(self), [&](const nb::object& o) {
    if (rc == 0 && o.ptr()) rc = visit(o.ptr(), arg);
  });
  return rc;
}

int tensor_tp_clear(PyObject* self) {
  if (PyObject** dict = _PyObject_GetDictPtr(self)) Py_CLEAR(*dict);
  if (!nb::inst_ready(self)) return 0;
  const Tensor& t = *nb::inst_ptr<Tensor>(self);
  if (!t.defined() || t.impl()->use_count() != 1) return 0;
  AutogradMeta* m = get_meta(t);
  if (!m) return 0;
  std::erase_if(m->leaf_hooks, [](auto& h) { return h.second.template target<PyTensorHook>() != nullptr; });
  if (m->grad_fn && m->grad_fn.use_count() == 1)
    std::erase_if(m->grad_fn->tensor_hooks, [](auto& h) { return h.fn.template target<PyTensorHook>() != nullptr; });
  return 0;
}

// A node as Python sees it: an instance of a subclass of Node named after it (MulBackward0), as
// torch's are (code that names nodes reads type(fn).__name__). The subclasses add no slots, so
// the wrapper's class can be switched in place; one per name, made on first sight.
static nb::object node_object(const std::shared_ptr<Node>& fn) {
  if (!fn) return nb::none();
  nb::object o = nb::cast(fn);
  nb::handle base = nb::type<Node>();
  if (o.type().is(base)) {
    static nb::dict* classes = new nb::dict();  // (never destroyed: it outlives the interpreter's teardown)
    nb::str name(fn->name().c_str());
    nb::object cls;
    if (classes->contains(name)) {
      cls = (*classes)[name];
    } else {
      nb::dict ns;
      ns["__slots__"] = nb::tuple();
      ns["__module__"] = "kindle.autograd.graph";
      cls = nb::module_::import_("builtins").attr("type")(name, nb::make_tuple(base), ns);
      (*classes)[name] = cls;
    }
    o.attr("__class__") = cls;
  }
  return o;
}

void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls) {
  nb::class_<HookHandle>(m, "_HookHandle")
      .def("remove", &HookHandle::remove)
      .def("__enter__", [](nb::handle self) { return nb::borrow(self); })
      .def("__exit__", [](HookHandle& h, nb::args) { h.remove(); });

  nb::class_<Node>(m, "Node", nb::is_weak_referenceable())
      .def("name", &Node::name)
      .def_prop_ro("next_functions", [](const Node& n) {
        nb::list l;
        for (auto& e : n.next_edges) l.append(nb::make_tuple(node_object(e.fn), e.input_nr));
        return nb::tuple(l);
      })
      .def("register_hook", [](std::shared_ptr<Node> n, nb::object fn) {
        n->post_hooks.push_back([fn](const tensor_list& gi, const tensor_list& go) -> tensor_list {
          nb::gil_scoped_acquire gil;
          nb::object r = fn(to_tuple(gi), to_tuple(go));
          return r.is_none() ? tensor_list() : to_tensors(r);
        });
        return HookHandle{Tensor(), n, 0, 1, n->post_hooks.size() - 1};
      })
      .def("register_prehook", [](std::shared_ptr<Node> n, nb::object fn) {
        n->pre_hooks.push_back([fn](const tensor_list& go) -> tensor_list {
          nb::gil_scoped_acquire gil;
          nb::object r = fn(to_tuple(go));
          return r.is_none() ? tensor_list() : to_tensors(r);
        });
        return HookHandle{Tensor(), n, 0, 2, n->pre_hooks.size() - 1};
      })
      .def("__repr__", [](const Node& n) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " object at %p>", static_cast<const void*>(&n));
        return "<" + n.name() + buf;
      });

  cls.def_prop_rw("grad", [](const Tensor& t) {
                    Tensor g = t.grad();
                    if (!g.defined() && t.requires_grad() && !t.is_leaf() && !t.retains_grad() &&
                        PyErr_WarnEx(PyExc_UserWarning, "The .grad attribute of a Tensor that is not a leaf Tensor is "
                                     "being accessed. Its .grad attribute won't be populated during "
                                     "autograd.backward(). If you indeed want the .grad field to be populated for a "
                                     "non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the "
                                     "non-leaf Tensor by mistake, make sure you access the leaf Tensor instead.", 1))
                      throw nb::python_error();  // warnings turned into errors
                    return grad_object(g);
                  },
                  [](const Tensor& t, nb::handle g) {
                    KINDLE_CHECK_TYPE(g.is_none() || nb::isinstance<Tensor>(g), "assigned grad expected to be a "
                                      "Tensor or None but got grad of type ", nb::inst_name(g).c_str());
                    t.set_grad(tensor_or_undefined(g));
                    if (!g.is_none() && t.grad().impl() == nb::inst_ptr<Tensor>(g)->impl()) remember_grad_object(g);
                  }, nb::arg("grad").none());
  cls.def_prop_ro("grad_fn", [](const Tensor& t) { return node_object(t.grad_fn()); });
  cls.def_prop_ro("is_leaf", &Tensor::is_leaf);
  cls.def_prop_ro("output_nr", &Tensor::output_nr);
  cls.def_prop_ro("retains_grad", &Tensor::retains_grad);
  cls.def_prop_ro("_version", [](const Tensor& t) {
    KINDLE_CHECK(!t.is_inference(), "Inference tensors do not track version counter.");
    return t.version();
  });
  cls.def("is_inference", &Tensor::is_inference);
  m.def("_increment_version", [](const Tensor& t) {  // torch.autograd.graph.increment_version
    KINDLE_CHECK(!t.is_inference(), "Inference tensors do not track version counter.");
    t.bump_version();
  });
  cls.def_prop_ro("_base", [](const Tensor& t) { return tensor_or_none(t.base()); });
  cls.def("_is_view", &Tensor::is_view);
  cls.def("retain_grad", &Tensor::retain_grad);
  cls.def("detach_", [](nb::handle_t<Tensor> h) {
    nb::inst_ptr<Tensor>(h)->detach_();
    return nb::borrow(h);
  });
  cls.def("register_hook", [](const Tensor& t, nb::object fn) {
    uint64_t id = t.register_hook(make_tensor_hook(std::move(fn)));
    return HookHandle{t, nullptr, id, 0, 0};
  }, nb::arg("hook"));

  cls.def("register_post_accumulate_grad_hook", [](nb::handle_t<Tensor> self, nb::object fn) {
    const Tensor& t = *nb::inst_ptr<Tensor>(self);
    KINDLE_CHECK(t.requires_grad(), "cannot register a hook on a tensor that doesn't require gradient");
    KINDLE_CHECK(t.is_leaf(), "post accumulate grad hooks cannot be registered on non-leaf tensors");
    // The hook gets the object it was registered on (a Parameter, as torch passes it: code keys
    // dicts by it), held weakly: a strong reference from the tensor's own hook would be a cycle.
    nb::weakref owner(self);
    uint64_t id = register_post_accumulate_grad_hook(t, [fn, owner](const Tensor& param) {
      nb::gil_scoped_acquire gil;
      PyObject* o = PyWeakref_GetObject(owner.ptr());
      if (o && o != Py_None && nb::inst_ptr<Tensor>(o)->impl() == param.impl()) fn(nb::handle(o));
      else fn(param);
    });
    return HookHandle{t, nullptr, id, 3, 0};
  }, nb::arg("hook"));
  m.def("_queue_callback", [](nb::object fn) {
    queue_callback([fn] {
      nb::gil_scoped_acquire gil;
      fn();
    });
  }, nb::arg("callback"));

  // forward-mode AD (python/kindle/autograd/forward_ad.py)
  m.def("_enter_dual_level", &forward_ad::enter_dual_level);
  m.def("_exit_dual_level", [](int64_t level) { forward_ad::exit_dual_level(level); }, nb::arg("level") = -1);
  m.def("_make_dual", [](const Tensor& t, const Tensor& tangent, int64_t level) {
    return forward_ad::make_dual(t, tangent, level);
  }, nb::arg("tensor"), nb::arg("tangent"), nb::arg("level") = -1);
  m.def("_unpack_dual", [](const Tensor& t, int64_t level) {
    auto [p, tan] = forward_ad::unpack_dual(t, level);
    return nb::make_tuple(p, tan.defined() ? nb::cast(tan) : nb::none());
  }, nb::arg("tensor"), nb::arg("level") = -1);
  m.def("_fw_active", [] { return forward_ad::active(); });
  m.def("_fw_current_level", [] { return forward_ad::current_level(); });
  m.def("_fw_tangent", [](const Tensor& t) -> nb::object {
    Tensor tan = forward_ad::tangent(t);
    return tan.defined() ? nb::cast(tan) : nb::none();
  });
  m.def("_fw_set_suspended", &forward_ad::detail::set_suspended);
  m.def("_fw_set_output_tangent", [](const Tensor& out, const Tensor& tangent, std::vector<Tensor> inputs) {
    forward_ad::Suspend s;
    forward_ad::set_output_tangent(out, tangent, inputs, false);
  });
  // CPU autocast (python/kindle/amp/autocast_mode.py)
  m.def("_autocast_set_enabled", &autocast::set_enabled);
  m.def("_autocast_is_enabled", &autocast::is_enabled);
  m.def("_autocast_set_dtype", &autocast::set_dtype);
  m.def("_autocast_get_dtype", &autocast::get_dtype);
  m.def("_autocast_clear_cache", &autocast::clear_cache);
  m.def("_autocast_set_cache_enabled", &autocast::set_cache_enabled);
  // the op profiler (python/kindle/profiler)
  m.def("_profiler_start", [](bool record_shapes, bool profile_memory, bool with_stack) {
    if (with_stack) profiler::set_stack_provider(compact_python_stack);
    profiler::start(profiler::Config{record_shapes, profile_memory, with_stack});
  });
  m.def("_profiler_stop", [] {
    std::vector<profiler::Event> events = profiler::stop();
    nb::list out;
    for (auto& e : events)
      out.append(nb::make_tuple(e.name, int(e.kind), e.start_ns, e.end_ns, e.thread, e.shapes, e.dtypes,
                                e.alloc_bytes, e.free_bytes, e.stack, e.output_shape));
    return out;
  });
  m.def("_profiler_active", &profiler::active);
  m.def("_profiler_begin", [](const std::string& name, bool module) {
    return profiler::begin_range(name, module ? profiler::EventKind::Module : profiler::EventKind::User);
  }, nb::arg("name"), nb::arg("module") = false);
  m.def("_profiler_end", &profiler::end_range);
  m.def("is_grad_enabled", &GradMode::flag);
  m.def("_set_grad_enabled", &GradMode::set_enabled);
  m.def("_is_inference_mode_enabled", &inference_mode_enabled);
  m.def("_set_inference_mode_enabled", &set_inference_mode_enabled);
  m.def("_set_anomaly_enabled", [](bool enabled, bool check_nan) {
    AnomalyMode::set_enabled(enabled, check_nan);
    if (enabled) AnomalyMode::set_stack_provider(format_python_stack);
  });
  m.def("_is_anomaly_enabled", &AnomalyMode::is_enabled);
  m.def("_is_anomaly_check_nan_enabled", &AnomalyMode::check_nan);

  // Ctrl-C during a long backward: Python only sets a flag, so the engine polls it.
  set_backward_interrupt_check([] {
    if (PyGILState_Check() && PyErr_CheckSignals() != 0) throw nb::python_error();
  });
  // Outputs and inputs are tensors or gradient edges (autograd.graph.GradientEdge: (node, output_nr)).
  m.def("_run_backward", [](nb::handle tensors, nb::handle grads, bool keep_graph, bool create_graph,
                            nb::handle inputs, bool allow_unused, bool accumulate) {
    tensor_list r = run_backward(to_backward_args(tensors), to_tensors(grads), keep_graph, create_graph,
                                 to_backward_args(inputs), allow_unused, accumulate);
    return to_tuple(r);
  });
  m.def("_current_graph_task_id", &current_graph_task_id);
  m.def("_will_engine_execute_node", [](const std::shared_ptr<Node>& n) { return will_engine_execute_node(n.get()); });
  // The edge a tensor's gradient flows along: (grad_fn or the leaf's accumulator, output_nr).
  m.def("_gradient_edge", [](const Tensor& t) {
    KINDLE_CHECK(t.requires_grad(), "It is not possible to get the gradient edge for a Tensor that does not require "
                 "gradients");
    Edge e = gradient_edge(t);
    return nb::make_tuple(node_object(e.fn), e.input_nr);
  });

  // autograd.Function: the context is a C++ FunctionCtx that Python code can add attributes to.
  nb::class_<FunctionCtx>(m, "FunctionCtx", nb::dynamic_attr())
      .def(nb::init<>())
      .def("save_for_backward", [](FunctionCtx& c, nb::args ts) {
        tensor_list v;
        for (nb::handle h : ts) {
          KINDLE_CHECK_TYPE(h.is_none() || nb::isinstance<Tensor>(h), "save_for_backward can only save variables, "
                            "but argument ", v.size(), " is not a Tensor or None (got ", nb::type_name(h.type()).c_str(),
                            "); keep other values as attributes of ctx");
          v.push_back(tensor_or_undefined(h));
        }
        c.save_for_backward(std::move(v));
      })
      .def("set_materialize_grads", [](FunctionCtx& c, bool v) { c.materialize_grads = v; }, nb::arg("value"))
      .def("mark_dirty", [](FunctionCtx& c, nb::args ts) { c.mark_dirty(to_tensors(ts)); })
      .def("mark_non_differentiable", [](FunctionCtx& c, nb::args ts) { c.mark_non_differentiable(to_tensors(ts)); })
      .def_prop_ro("saved_tensors", [](const FunctionCtx& c) { return to_tuple(c.saved_tensors()); });

  m.def("_function_apply", [](const std::string& name, std::shared_ptr<FunctionCtx> ctx, nb::handle inputs,
                              nb::list outputs, nb::object backward) {
    tensor_list ins = to_tensors(inputs);
    std::vector<size_t> where;
    tensor_list outs;
    for (size_t i = 0; i < outputs.size(); ++i)
      if (nb::isinstance<Tensor>(outputs[i])) {
        where.push_back(i);
        outs.push_back(nb::cast<Tensor>(outputs[i]));
      }
    auto fn = [backward](FunctionCtx& c, tensor_list grads) -> tensor_list {
      nb::gil_scoped_acquire gil;
      nb::object r = backward(nb::find(&c), to_tuple(grads));
      return to_tensors(r);
    };
    tensor_list wrapped = wrap_outputs(name, ins, outs, ctx, fn);
    for (size_t k = 0; k < where.size(); ++k) outputs[where[k]] = nb::cast(wrapped[k]);
    return outputs;
  });
}

}  // namespace kindle::python
