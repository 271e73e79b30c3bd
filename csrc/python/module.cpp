// kindle._C: dtype objects, exception mapping, then each area's bindings.
#include <cstring>
#include <map>
#include <random>

#include <nanobind/stl/string_view.h>

#include "core/derived_cache.h"
#include "kindle/autograd.h"
#include "kindle/cpu_capability.h"
#include "kindle/random_guard.h"
#include "ops/tensor_iter.h"

#include "kindle/warning.h"
#include "python/bind_common.h"
#include "python/torch_function.h"

namespace kindle::python {

// Seeds are taken modulo 2^64, as PyTorch does (negative seeds and seeds >= 2^63 both work).
uint64_t seed_value(nb::int_ s) {
  unsigned long long v = PyLong_AsUnsignedLongLongMask(s.ptr());
  if (v == (unsigned long long)-1 && PyErr_Occurred()) throw nb::python_error();
  return uint64_t(v);
}

PyObject* g_dtype_objects[kNumDTypes];

struct DTypeInfo {
  DType value;
};

nb::object write_out(nb::handle out, const Tensor& result, const char* op) {
  if (!nb::isinstance<Tensor>(out))
    throw nb::type_error(detail::str_cat(op, "(): argument 'out' must be Tensor, not ", Py_TYPE(out.ptr())->tp_name).c_str());
  const Tensor& dst = *nb::inst_ptr<Tensor>(out);
  KINDLE_CHECK(!result.requires_grad(), op, "(): functions with out=... arguments don't support automatic "
               "differentiation, but one of the arguments requires grad.");
  KINDLE_CHECK(can_cast(result.dtype(), dst.dtype()), op, "(): result type ", result.dtype(),
               " can't be cast to the desired output type ", dst.dtype());
  if (dst.sizes() != result.sizes()) {
    if (dst.numel() != 0 &&
        PyErr_WarnEx(PyExc_UserWarning, detail::str_cat("An output with one or more elements was resized since it had "
                     "shape ", dst.sizes(), ", which does not match the required output shape ", result.sizes(), ". This "
                     "behavior is deprecated, and in a future release outputs will not be resized unless they have zero "
                     "elements.").c_str(), 1) < 0)
      throw nb::python_error();
    dst.impl()->set_data(*empty_tensor(result.sizes(), dst.dtype(), dst.device()).impl());
  }
  dst.copy_(result);
  return nb::borrow(out);
}

const Tensor* out_in_place(nb::handle out, std::initializer_list<const Tensor*> inputs) {
  if (!nb::isinstance<Tensor>(out)) return nullptr;
  const Tensor* dst = nb::inst_ptr<Tensor>(out);
  const bool grad = autograd::GradMode::is_enabled();
  if (grad && dst->requires_grad()) return nullptr;
  DimVector shape;
  for (const Tensor* t : inputs) {
    if (t->device() != dst->device() || (grad && t->requires_grad())) return nullptr;
    try {
      shape = broadcast_shapes(shape, t->sizes(), "out=");
    } catch (const Error&) {  // not broadcastable: write_out's path raises the op's own error
      return nullptr;
    }
  }
  return IntArrayRef(dst->sizes()) == IntArrayRef(shape) ? dst : nullptr;
}

bool int_from_py(PyObject* o, int64_t& out) {
  if (PyLong_Check(o)) {
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = v;
    return true;
  }
  if (PyIndex_Check(o) && !PyFloat_Check(o)) {
    PyObject* i = PyNumber_Index(o);
    if (!i) { PyErr_Clear(); return false; }
    long long v = PyLong_AsLongLong(i);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    out = v;
    return true;
  }
  return false;
}

DimList args_to_dims(const nb::args& args) {
  DimList d;
  for (nb::handle h : args) {
    int64_t v;
    if (PyBool_Check(h.ptr()) || !int_from_py(h.ptr(), v))
      throw TypeError(detail::str_cat("expected a sequence of integers, but got an element of type ",
                                      nb::inst_name(h).c_str()));
    d.dims.push_back(v);
  }
  return d;
}

std::vector<Tensor> args_to_tensors(const nb::args& args) {
  if (args.size() == 1 && (PyList_Check(args[0].ptr()) || PyTuple_Check(args[0].ptr())))
    return nb::cast<std::vector<Tensor>>(args[0]);
  std::vector<Tensor> v;
  for (nb::handle h : args) v.push_back(nb::cast<Tensor>(h));
  return v;
}

// The types live in kindle.return_types (their one registry, shared with the Python ops); the
// lookup is cached here, since results are built on every call of max, sort, ...
static nb::object named_tuple_type(const char* name, std::initializer_list<const char*> fields) {
  static std::map<std::string, nb::object>* types = new std::map<std::string, nb::object>();
  auto it = types->find(name);
  if (it != types->end()) return it->second;
  nb::list f;
  for (const char* s : fields) f.append(nb::str(s));
  nb::object t = nb::module_::import_("kindle.return_types").attr("_get")(nb::str(name), f);
  (*types)[name] = t;
  return t;
}
nb::object to_named_tuple(const char* name, std::initializer_list<const char*> fields, std::tuple<Tensor, Tensor>&& t) {
  return named_tuple_type(name, fields)(to_py(std::get<0>(t)), to_py(std::get<1>(t)));
}
nb::object to_named_tuple(const char* name, std::initializer_list<const char*> fields, std::tuple<Tensor, Tensor, Tensor>&& t) {
  return named_tuple_type(name, fields)(to_py(std::get<0>(t)), to_py(std::get<1>(t)), to_py(std::get<2>(t)));
}

nb::object write_out(nb::handle out, const char* name, std::initializer_list<const char*> fields,
                     std::tuple<Tensor, Tensor>&& t, const char* op) {
  KINDLE_CHECK_TYPE(nb::isinstance<nb::tuple>(out) || nb::isinstance<nb::list>(out), op,
                    "(): argument 'out' must be tuple of Tensors, not ", Py_TYPE(out.ptr())->tp_name);
  nb::sequence seq = nb::borrow<nb::sequence>(out);
  KINDLE_CHECK_TYPE(nb::len(seq) == 2, op, "(): argument 'out' must be a tuple of 2 Tensors, got ", nb::len(seq));
  write_out(seq[0], std::get<0>(t), op);
  write_out(seq[1], std::get<1>(t), op);
  return named_tuple_type(name, fields)(seq[0], seq[1]);
}

// layout= and memory_format= of factories, as PyTorch's CPU build accepts them: strided tensors
// only; the memory format is applied to the result by apply_memory_format.
void check_factory_options(nb::handle layout, nb::handle memory_format, const char* op) {
  if (!layout.is_none()) {
    std::string type = nb::type_name(layout.type()).c_str();
    KINDLE_CHECK_TYPE(type.ends_with("layout"), op, "(): argument 'layout' must be torch.layout, not ", type);
    std::string text = nb::str(layout).c_str();
    KINDLE_CHECK_NOT_IMPLEMENTED(text.ends_with(".strided"), op, "(): layout ", text, " is not supported: Kindle has "
                                 "strided tensors only");
  }
  if (!memory_format.is_none()) {
    std::string type = nb::type_name(memory_format.type()).c_str();
    KINDLE_CHECK_TYPE(type.ends_with("memory_format"), op, "(): argument 'memory_format' must be torch.memory_format, not ",
                      type);
  }
}

// memory_format= of a factory: channels_last (channels_last_3d) lays the new 4-d (5-d) tensor out
// with the channels innermost, as PyTorch does; the other formats leave it row-major.
int channels_last_rank(nb::handle memory_format, const char* op) {
  if (memory_format.is_none()) return 0;
  std::string type = nb::type_name(memory_format.type()).c_str();
  KINDLE_CHECK_TYPE(type.ends_with("memory_format"), op, "(): argument 'memory_format' must be torch.memory_format, not ",
                    type);
  std::string text = nb::str(memory_format).c_str();
  if (text.ends_with(".channels_last")) return 4;
  if (text.ends_with(".channels_last_3d")) return 5;
  return text.ends_with(".preserve_format") ? -1 : 0;
}

std::vector<int64_t> channels_last_strides(IntArrayRef sizes) {
  // From the innermost dimension (channels) outwards: C, W, H, (D,) N.
  std::vector<int64_t> order = sizes.size() == 4 ? std::vector<int64_t>{1, 3, 2, 0} : std::vector<int64_t>{1, 4, 3, 2, 0};
  std::vector<int64_t> strides(sizes.size());
  int64_t step = 1;
  for (int64_t d : order) {
    strides[size_t(d)] = step;
    step *= std::max<int64_t>(sizes[size_t(d)], 1);
  }
  return strides;
}

bool has_channels_last_strides(const Tensor& t, bool ignore_size_one) {
  if (t.dim() != 4 && t.dim() != 5) return false;
  std::vector<int64_t> want = channels_last_strides(t.sizes());
  for (int64_t d = 0; d < t.dim(); ++d)
    if (t.stride(d) != want[size_t(d)] && !(ignore_size_one && t.size(d) == 1)) return false;
  return true;
}

Tensor to_channels_last(const Tensor& t, int rank, const char* op) {
  KINDLE_CHECK(t.dim() == rank, op, "(): required rank ", rank, " tensor to use ",
               rank == 4 ? "channels_last" : "channels_last_3d", " format (got a tensor of ", t.dim(), " dimensions)");
  Tensor out = empty_strided(t.sizes(), channels_last_strides(t.sizes()), t.dtype());
  out.copy_(t);
  return out;
}

// memory_format= of a factory: channels_last (channels_last_3d) lays the new 4-d (5-d) tensor out
// with the channels innermost, as PyTorch does; the other formats leave it row-major. *_like with
// preserve_format (the default) gives a channels-last input a channels-last result.
// A permutation of a dense layout (no gaps, no overlaps): what preserve_format copies exactly.
bool dense_in_some_order(const Tensor& t) {
  int64_t expected = 1;
  DimVector order = dims_by_stride(t);
  for (size_t i = order.size(); i-- > 0;) {  // innermost first
    const int64_t d = order[i];
    if (t.size(d) == 1) continue;
    if (t.stride(d) != expected) return false;
    expected *= t.size(d);
  }
  return true;
}

Tensor apply_memory_format(Tensor t, nb::handle memory_format, const char* op, const Tensor* like) {
  int rank = channels_last_rank(memory_format, op);
  const bool preserve = like && (memory_format.is_none() || rank == -1) && like->sizes() == t.sizes() &&
                        !like->is_contiguous();
  if (preserve && has_channels_last_strides(*like, false)) rank = int(like->dim());
  if (rank <= 0 && preserve && t.numel() > 1 && dense_in_some_order(*like)) {
    // preserve_format on a permuted input (a transpose): the result has the input's strides
    bool requires_grad = t.requires_grad();
    Tensor out;
    {
      autograd::NoGradGuard no_grad;
      out = empty_tensor_like_layout(*like, t.dtype(), t.device());
      out.copy_(t);
    }
    if (requires_grad) out.requires_grad_(true);
    return out;
  }
  if (rank <= 0) return t;
  bool requires_grad = t.requires_grad();
  Tensor out;
  {
    autograd::NoGradGuard no_grad;  // a factory's result is a leaf
    out = to_channels_last(t, rank, op);
  }
  if (requires_grad) out.requires_grad_(true);
  return out;
}

}  // namespace kindle::python

using namespace kindle;
using namespace kindle::python;

namespace {
PyObject* g_linalg_error;  // torch.linalg.LinAlgError, a RuntimeError (immortal, as the dtypes)
PyObject* g_oom_error;     // torch.OutOfMemoryError (torch.cuda.OutOfMemoryError), a RuntimeError

// An error's message may quote bytes from a file (a zip entry's name): not UTF-8 is escaped, so
// the error still arrives as itself and not as a UnicodeDecodeError.
void set_error(PyObject* type, const char* what) {
  PyObject* msg = PyUnicode_DecodeUTF8(what, Py_ssize_t(std::strlen(what)), "backslashreplace");
  if (!msg) return;  // (the decode's own error stands)
  PyErr_SetObject(type, msg);
  Py_DECREF(msg);
}
}  // namespace

namespace {
// NumPy's names for dim and keepdim (x.sum(axis=0, keepdims=True)), which torch's argument parser
// accepts wherever the parameter is: each binding that has either parameter gets one more
// overload, tried only after the others failed, that renames the keywords and calls again (so the
// common call pays nothing). Without a NumPy name it passes (next_overload), and nanobind raises
// its usual TypeError.
bool takes_dim(nb::handle f) {
  if (!nb::hasattr(f, "__nb_signature__")) return false;
  for (nb::handle sig : nb::borrow<nb::tuple>(f.attr("__nb_signature__"))) {
    std::string_view text = nb::cast<std::string_view>(nb::borrow<nb::tuple>(sig)[0]);
    for (std::string_view p : {"(dim: ", ", dim: ", "(keepdim: ", ", keepdim: "})
      if (text.find(p) != std::string_view::npos) return true;
  }
  return false;
}

nb::dict renamed_kwargs(const nb::kwargs& kwargs) {
  nb::dict out;
  bool renamed = false;
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    if (key == "axis") key = "dim", renamed = true;
    else if (key == "keepdims") key = "keepdim", renamed = true;
    KINDLE_CHECK_TYPE(!out.contains(key.c_str()), "got multiple values for argument '", key, "'");
    out[key.c_str()] = v;
  }
  if (!renamed) throw nb::next_overload();
  return out;
}

std::vector<std::string> names_taking_dim(nb::handle scope) {
  std::vector<std::string> names;
  for (nb::handle name : nb::borrow<nb::list>(nb::module_::import_("builtins").attr("dir")(scope))) {
    std::string n = nb::cast<std::string>(name);
    if (!n.empty() && n[0] != '_' && takes_dim(scope.attr(name))) names.push_back(n);
  }
  return names;
}

void add_numpy_names(nb::module_ scope) {
  for (const std::string& n : names_taking_dim(scope))
    scope.def(n.c_str(), [scope, n](nb::args args, nb::kwargs kwargs) {
      nb::dict k = renamed_kwargs(kwargs);
      return scope.attr(n.c_str())(*args, **k);
    });
}

void add_numpy_names(nb::class_<Tensor>& cls) {
  for (const std::string& n : names_taking_dim(cls))
    cls.def(n.c_str(), [n](nb::handle self, nb::args args, nb::kwargs kwargs) {
      nb::dict k = renamed_kwargs(kwargs);
      return self.attr(n.c_str())(*args, **k);
    });
}
}  // namespace

NB_MODULE(_C, m) {
  // The dtype objects live as long as the process, on purpose: do not report them at exit.
  nb::set_leak_warnings(false);
  // the core's warnings (kindle/warning.h) as UserWarning, an exception where warnings are errors
  set_warning_handler([](const std::string& message) {
    nb::gil_scoped_acquire gil;
    if (PyErr_WarnEx(PyExc_UserWarning, message.c_str(), 1) < 0) throw nb::python_error();
  });
  g_linalg_error = PyErr_NewException("kindle.linalg.LinAlgError", PyExc_RuntimeError, nullptr);
  m.attr("LinAlgError") = nb::handle(g_linalg_error);
  g_oom_error = PyErr_NewException("kindle.OutOfMemoryError", PyExc_RuntimeError, nullptr);
  m.attr("OutOfMemoryError") = nb::handle(g_oom_error);
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const IndexError& e) {
      set_error(PyExc_IndexError, e.what());
    } catch (const ValueError& e) {
      set_error(PyExc_ValueError, e.what());
    } catch (const TypeError& e) {
      set_error(PyExc_TypeError, e.what());
    } catch (const NotImplementedError& e) {
      set_error(PyExc_NotImplementedError, e.what());
    } catch (const LinAlgError& e) {
      set_error(g_linalg_error, e.what());
    } catch (const OutOfMemoryError& e) {
      set_error(g_oom_error, e.what());
    } catch (const AssertionError& e) {
      set_error(PyExc_AssertionError, e.what());
    } catch (const kindle::OSError& e) {  // OSError(errno, message, filename) picks the subclass
      nb::object args = nb::make_tuple(e.err, e.message, e.filename);
      PyErr_SetObject(PyExc_OSError, args.ptr());
    } catch (const Error& e) {
      set_error(PyExc_RuntimeError, e.what());
    }
  });

  nb::class_<DTypeInfo>(m, "dtype")
      .def_prop_ro("is_floating_point", [](const DTypeInfo& d) { return is_floating_point(d.value); })
      .def_prop_ro("is_signed", [](const DTypeInfo& d) { return is_signed(d.value); })
      .def_prop_ro("is_complex", [](const DTypeInfo& d) { return is_complex(d.value); })
      .def_prop_ro("itemsize", [](const DTypeInfo& d) { return itemsize(d.value); })
      .def("__repr__", [](const DTypeInfo& d) { return std::string("kindle.") + dtype_name(d.value); })
      .def("__reduce__", [](const DTypeInfo& d) { return std::string(dtype_name(d.value)); });
  for (int i = 0; i < kNumDTypes; ++i) {
    nb::object o = nb::cast(DTypeInfo{DType(i)});
    g_dtype_objects[i] = o.release().ptr();  // immortal for the life of the module
    m.attr(dtype_name(DType(i))) = nb::handle(g_dtype_objects[i]);
  }

  nb::class_<Generator>(m, "Generator")
      .def("__init__", [](Generator* g, std::optional<Device>) { new (g) Generator(kDefaultGeneratorSeed); },
           nb::arg("device").none() = nb::none())
      .def("manual_seed", [](nb::handle_t<Generator> self, nb::int_ seed) {
        (*nb::inst_ptr<Generator>(self))->manual_seed(seed_value(seed));
        return nb::borrow(self);
      }, nb::arg("seed"))
      .def("initial_seed", [](const Generator& g) { return g->seed(); })
      .def("seed", [](Generator& g) { uint64_t s = nondeterministic_seed(); g->manual_seed(s); return s; })
      .def_prop_ro("device", [](const Generator&) { return kCPU; })
      // torch's CPU state: a uint8 tensor of 5056 bytes in torch's layout, so states cross over.
      .def("get_state", [](const Generator& g) {
        Tensor t = empty({int64_t(GeneratorImpl::kStateBytes)}, kUInt8);
        g->get_state(t.data_ptr<uint8_t>());
        return t;
      })
      .def("set_state", [](nb::handle_t<Generator> self, const Tensor& state) {
        KINDLE_CHECK_TYPE(state.dtype() == kUInt8, "set_state: the RNG state must be a kindle.ByteTensor (dtype "
                          "kindle.uint8), but got ", state.dtype());
        KINDLE_CHECK(state.numel() == int64_t(GeneratorImpl::kStateBytes), "Expected a CPUGeneratorImplState of size ",
                     GeneratorImpl::kStateBytes, " but found the input RNG state size to be ", state.numel());
        Tensor c = state.contiguous();
        (*nb::inst_ptr<Generator>(self))->set_state(c.data_ptr<uint8_t>(), size_t(c.numel()));
        return nb::borrow(self);
      }, nb::arg("new_state"));
  m.def("default_generator", []() { return default_generator(); });
  m.def("_vmap_random_guard", [](int delta) { random_guard(delta); });
  m.def("manual_seed", [](nb::int_ s) { manual_seed(seed_value(s)); }, nb::arg("seed"));
  m.def("seed", []() { return kindle::seed(); });
  m.def("initial_seed", []() { return default_generator()->seed(); });
  m.def("set_num_threads", &set_num_threads, nb::arg("num"));
  m.def("get_num_threads", &get_num_threads);
  m.def("_get_cpu_capability", []() { return cpu_capability_name(cpu_capability()); });
  m.def("get_default_dtype", []() { return default_dtype(); });
  m.def("set_default_dtype", &set_default_dtype, nb::arg("d"));
  m.def("_get_default_device", []() { return g_default_device; });
  m.def("_set_default_device", [](std::optional<Device> d) {
    if (d) check_device_usable(*d, "set_default_device");
    g_default_device = d && d->is_cpu() ? std::nullopt : d;
  }, nb::arg("device").none());
  m.def("promote_types", &promote_types, nb::arg("type1"), nb::arg("type2"));
  m.def("can_cast", &can_cast, nb::arg("from_"), nb::arg("to"));
  m.def("result_type", [](const TensorArg& a, const TensorArg& b) -> nb::object {
    KINDLE_TORCH_FUNCTION('m', "result_type", a.src, b.src);
    return nb::cast(result_type({a.get(), b.get()}));
  },
        nb::arg("tensor1"), nb::arg("tensor2"));
  m.def("empty_cache", &empty_cache);
  m.def("cpu_cache_stats", []() { auto s = cpu_cache_stats(); return std::make_tuple(s.cached_bytes, s.cache_hits, s.cache_misses); });
  m.def("cpu_memory_stats", []() {
    CpuCacheStats s = cpu_cache_stats();
    nb::dict d;
    d["allocated_bytes"] = s.allocated_bytes;
    d["peak_allocated_bytes"] = s.peak_allocated_bytes;
    d["cached_bytes"] = s.cached_bytes;
    d["cache_limit"] = s.cache_limit;
    d["cache_hits"] = s.cache_hits;
    d["cache_misses"] = s.cache_misses;
    DerivedCacheStats ds = derived_cache_stats();  // Note [Derived data cache]
    d["derived_entries"] = ds.entries;
    d["derived_bytes"] = ds.bytes;
    d["derived_hits"] = ds.hits;
    d["derived_misses"] = ds.misses;
    return d;
  });
  m.def("cpu_cache_set_limit", &cpu_cache_set_limit, nb::arg("bytes"));
  m.def("_set_printoptions", [](int64_t precision, double threshold, int64_t edgeitems, int64_t linewidth,
                                std::optional<bool> sci_mode) {
    set_printoptions(PrintOptions{precision, threshold, edgeitems, linewidth, sci_mode});
  });
  m.def("_get_printoptions", []() {
    PrintOptions o = get_printoptions();
    return std::make_tuple(o.precision, o.threshold, o.edgeitems, o.linewidth, o.sci_mode);
  });

  static PyType_Slot tensor_slots[] = {{Py_tp_traverse, (void*)tensor_tp_traverse},
                                       {Py_tp_clear, (void*)tensor_tp_clear},
                                       {0, nullptr}};
  nb::class_<Tensor> cls(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable(), nb::type_slots(tensor_slots));
  bind_torch_function(m);
  bind_tensor(m, cls);
  bind_indexing(cls);
  bind_numpy(m, cls);
  bind_tensor_constructor(cls);
  bind_autograd(m, cls);
  bind_saved_tensors(m);
  bind_generated_ops(m, cls);
  bind_optim(m);
  bind_init(m);
  bind_serialize(m);
  bind_distributed(m);
  bind_cuda(m);
  add_numpy_names(m);
  add_numpy_names(nb::borrow<nb::module_>(m.attr("_nn")));
  add_numpy_names(cls);
}
