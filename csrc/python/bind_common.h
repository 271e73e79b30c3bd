// Shared by the binding files: nanobind, the type casters for kindle's value types (dtype,
// device, Scalar, dim lists) and small conversion helpers. Python numbers passed where a Tensor
// is expected become 0-d "wrapped number" tensors (Tensor's implicit __init__).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "kindle/cuda.h"
#include "kindle/kindle.h"

namespace nb = nanobind;

namespace kindle::python {

// One Python object per dtype (kindle.float32, ...), created at import.
extern PyObject* g_dtype_objects[kNumDTypes];

struct DimList {
  DimVector dims;
  PyObject* src = nullptr;  // the Python object it came from (for __torch_function__), when it did
  DimList() = default;
  DimList(std::initializer_list<int64_t> il) : dims(il) {}
};
// The device factories use when none is given: kindle.set_default_device / `with kindle.device(d):`
// (None: the CPU). Python-level only, as torch's: C++ code and *_like ops never consult it; and
// per thread, as torch's (a context entered on one thread does not move another's tensors).
inline thread_local std::optional<Device> g_default_device;
inline std::optional<Device> factory_device(const std::optional<Device>& d) { return d ? d : g_default_device; }
// A CUDA device asked for where none can serve it: NotImplementedError saying why.
// As torch: a CPU-only build answers CUDA with AssertionError, a CUDA build without a GPU with
// RuntimeError.
inline void check_device_usable(Device d, const char* op) {
  if (!d.is_cuda()) return;
  KINDLE_CHECK_ASSERT(cuda::is_built(), op, ": Torch not compiled with CUDA enabled (Kindle was built without a "
                      "CUDA backend; only cpu is available)");
  KINDLE_CHECK(cuda::is_available(), op, ": Found no NVIDIA driver on your system: this machine has no GPU (only cpu "
               "is available)");
}

inline nb::object py_source(const DimList& d) { return d.src ? nb::borrow(d.src) : nb::cast(d); }
inline nb::object py_source(const std::optional<DimList>& d) { return d ? py_source(*d) : nb::none(); }
inline OptionalIntArrayRef opt_dims(const std::optional<DimList>& d) {
  return d ? OptionalIntArrayRef(IntArrayRef(d->dims)) : std::nullopt;
}
inline std::optional<std::string_view> opt_sv(const std::optional<std::string>& s) {
  return s ? std::optional<std::string_view>(*s) : std::nullopt;
}
DimList args_to_dims(const nb::args& args);
std::vector<Tensor> args_to_tensors(const nb::args& args);

// A Tensor argument that also takes what PyTorch converts for it: a Python number (a 0-d
// "wrapped number" tensor, which type promotion ranks below dimensioned tensors) or a NumPy
// array (copied). Numbers and arrays convert only in nanobind's second overload pass, so a
// Scalar overload wins for a number. (No implicit Scalar -> Tensor conversion exists: it would
// make kindle.Tensor(3) a 0-d tensor, where the legacy constructor makes a tensor of size 3.)
struct TensorArg {
  const Tensor* ptr = nullptr;  // the argument's own tensor (the caller keeps it alive)
  Tensor owned;                 // a converted number or array
  PyObject* src = nullptr;      // the Python object it came from (for __torch_function__)
  const Tensor& get() const { return ptr ? *ptr : owned; }
  operator const Tensor&() const { return get(); }
};
inline std::optional<Tensor> opt_tensor(const std::optional<TensorArg>& t) {
  return t ? std::optional<Tensor>(t->get()) : std::nullopt;
}
inline nb::handle py_source(const std::optional<TensorArg>& t) { return t ? nb::handle(t->src) : nb::none(); }
// A list of tensors (or of optional tensors) with the Python object it came from.
template <typename V>
struct ListArg {
  V items;
  PyObject* src = nullptr;
};
// A number or a NumPy array as a tensor (numpy.cpp); false for anything else.
bool tensor_from_number_or_array(nb::handle h, Tensor& out);
// True for an object (not a Tensor) whose type defines __torch_function__, while overriding is
// enabled; it turns on the bindings' scan (torch_function.cpp).
bool accept_torch_function_object(PyObject* o);
nb::object to_named_tuple(const char* name, std::initializer_list<const char*> fields, std::tuple<Tensor, Tensor>&& t);
nb::object to_named_tuple(const char* name, std::initializer_list<const char*> fields, std::tuple<Tensor, Tensor, Tensor>&& t);
bool int_from_py(PyObject* o, int64_t& out);
// The out= form of a function: `result` copied into the tensor `out` (resized to the result's
// shape as PyTorch resizes it, with its warning when out had elements), which is returned.
nb::object write_out(nb::handle out, const Tensor& result, const char* op);
// An op's result as Python sees it: an undefined tensor (an optional output not computed, such as
// attention weights with need_weights=False) is None, never a Tensor object without data.
template <typename T>
nb::object to_py(T&& v) {
  if constexpr (std::is_same_v<std::decay_t<T>, Tensor>) {
    if (!v.defined()) return nb::none();
  }
  return nb::cast(std::forward<T>(v));
}

// A method's result: the tensor object itself where the op returned its input unchanged, as
// torch's (x.contiguous() is x, x.float() is x for a float x).
inline nb::object self_or_new(nb::handle self_obj, Tensor r) {
  if (r.defined() && r.impl() == nb::inst_ptr<Tensor>(self_obj)->impl()) return nb::borrow(self_obj);
  return to_py(std::move(r));
}
nb::object write_out(nb::handle out, const char* name, std::initializer_list<const char*> fields,
                     std::tuple<Tensor, Tensor>&& t, const char* op);
// The tensor `out` when an elementwise op may write its result straight into it: a Tensor of
// the inputs' broadcast shape, on their device, with no gradient to record; else nullptr (and
// write_out's path: resizing, its errors).
const Tensor* out_in_place(nb::handle out, std::initializer_list<const Tensor*> inputs);
void check_factory_options(nb::handle layout, nb::handle memory_format, const char* op);

void bind_generated_ops(nb::module_& m, nb::class_<Tensor>& cls);
void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls);
void bind_indexing(nb::class_<Tensor>& cls);
void bind_numpy(nb::module_& m, nb::class_<Tensor>& cls);
void bind_tensor_constructor(nb::class_<Tensor>& cls);
void bind_autograd(nb::module_& m, nb::class_<Tensor>& cls);
void bind_saved_tensors(nb::module_& m);  // after bind_autograd (it extends Node)
// Memory formats: 4 / 5 for channels_last / channels_last_3d, -1 for preserve_format, 0 otherwise
// (TypeError for what is not a memory format).
int channels_last_rank(nb::handle memory_format, const char* op);
bool has_channels_last_strides(const Tensor& t, bool ignore_size_one);
Tensor to_channels_last(const Tensor& t, int rank, const char* op);  // a copy with those strides
Tensor apply_memory_format(Tensor t, nb::handle memory_format, const char* op, const Tensor* like = nullptr);
void bind_optim(nb::module_& m);
void bind_distributed(nb::module_& m);
void bind_cuda(nb::module_& m);
void bind_init(nb::module_& m);
void bind_serialize(nb::module_& m);
int tensor_tp_traverse(PyObject* self, visitproc visit, void* arg);
int tensor_tp_clear(PyObject* self);

}  // namespace kindle::python

namespace nanobind::detail {

template <> struct type_caster<kindle::DType> {
  NB_TYPE_CASTER(kindle::DType, const_name("kindle.dtype"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    for (int i = 0; i < kindle::kNumDTypes; ++i)
      if (src.ptr() == kindle::python::g_dtype_objects[i]) { value = kindle::DType(i); return true; }
    return false;
  }
  static handle from_cpp(kindle::DType d, rv_policy, cleanup_list*) noexcept {
    return handle(kindle::python::g_dtype_objects[int(d)]).inc_ref();
  }
};

template <> struct type_caster<kindle::Device> {
  NB_TYPE_CASTER(kindle::Device, const_name("kindle.device"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    PyObject* s = src.ptr();
    if (!PyUnicode_Check(s)) {
      // kindle.device objects expose their text as `type` (+ `index`); use str()
      if (!PyObject_HasAttrString(s, "_kindle_device")) return false;
      s = PyObject_Str(s);
      if (!s) { PyErr_Clear(); return false; }
      bool ok = parse(s);
      Py_DECREF(s);
      return ok;
    }
    return parse(s);
  }
  bool parse(PyObject* s) noexcept {
    Py_ssize_t n;
    const char* c = PyUnicode_AsUTF8AndSize(s, &n);
    if (!c) { PyErr_Clear(); return false; }
    try { value = kindle::Device::parse(std::string_view(c, size_t(n))); } catch (...) { return false; }
    return true;
  }
  static handle from_cpp(kindle::Device d, rv_policy, cleanup_list*) noexcept {
    object mod = steal(PyImport_ImportModule("kindle"));
    if (!mod.is_valid()) return handle();
    std::ostringstream ss;
    ss << d;
    return mod.attr("device")(ss.str()).release();
  }
};

template <> struct type_caster<kindle::Scalar> {
  NB_TYPE_CASTER(kindle::Scalar, const_name("Number"))
  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    if (PyBool_Check(o)) { value = kindle::Scalar(o == Py_True); return true; }
    if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      // Beyond int64: refused (as PyTorch's "int too big to convert"), not silently turned into
      // a float that would change the result's dtype.
      if (overflow) return false;
      value = kindle::Scalar(int64_t(v));
      return true;
    }
    if (PyFloat_Check(o)) { value = kindle::Scalar(PyFloat_AS_DOUBLE(o)); return true; }
    if (PyComplex_Check(o)) {
      value = kindle::Scalar(kindle::c128(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o)));
      return true;
    }
    if (!(flags & uint8_t(cast_flags::convert))) return false;
    if (nanobind::isinstance<kindle::Tensor>(src)) {
      kindle::Tensor* t = nanobind::inst_ptr<kindle::Tensor>(src);
      if (!t->defined() || t->numel() != 1) return false;
      try { value = t->item(); } catch (...) { return false; }
      return true;
    }
    if (PyIndex_Check(o)) {
      long long v = PyLong_AsLongLong(o);
      if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return false; }
      value = kindle::Scalar(int64_t(v));
      return true;
    }
    double d = PyFloat_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred()) { PyErr_Clear(); return false; }
    value = kindle::Scalar(d);
    return true;
  }
  static handle from_cpp(const kindle::Scalar& s, rv_policy, cleanup_list*) noexcept {
    if (s.is_bool()) return handle(s.to_bool() ? Py_True : Py_False).inc_ref();
    if (s.is_integral()) return PyLong_FromLongLong(s.to_int());
    if (s.is_complex()) return PyComplex_FromDoubles(s.to_complex().real(), s.to_complex().imag());
    return PyFloat_FromDouble(s.to_double());
  }
};

template <> struct type_caster<kindle::python::TensorArg> {
  NB_TYPE_CASTER(kindle::python::TensorArg, const_name("Tensor"))
  bool from_python(handle src, uint8_t flags, cleanup_list*) noexcept {
    value.src = src.ptr();
    if (nanobind::isinstance<kindle::Tensor>(src)) {
      value.ptr = nanobind::inst_ptr<kindle::Tensor>(src);
      return true;
    }
    // An object with __torch_function__ (a duck-typed tensor): accepted as an undefined tensor
    // that the binding never reads, since it hands the call to __torch_function__ first
    // (python/torch_function.h; every binding taking a TensorArg does).
    if (kindle::python::accept_torch_function_object(src.ptr())) {
      value.ptr = nullptr;
      value.owned = kindle::Tensor();
      return true;
    }
    if (!(flags & uint8_t(cast_flags::convert))) return false;
    value.ptr = nullptr;
    try {
      return kindle::python::tensor_from_number_or_array(src, value.owned);
    } catch (...) {
      return false;
    }
  }
  static handle from_cpp(const kindle::python::TensorArg& t, rv_policy p, cleanup_list* c) noexcept {
    return make_caster<kindle::Tensor>::from_cpp(t.get(), p, c);
  }
};

template <typename V> struct type_caster<kindle::python::ListArg<V>> {
  NB_TYPE_CASTER(kindle::python::ListArg<V>, make_caster<V>::Name)
  bool from_python(handle src, uint8_t flags, cleanup_list* cleanup) noexcept {
    make_caster<V> items;
    if (!items.from_python(src, flags, cleanup)) return false;
    value.items = std::move(items.value);
    value.src = src.ptr();
    return true;
  }
  static handle from_cpp(const kindle::python::ListArg<V>& l, rv_policy p, cleanup_list* c) noexcept {
    return make_caster<V>::from_cpp(l.items, p, c);
  }
};

template <> struct type_caster<kindle::python::DimList> {
  NB_TYPE_CASTER(kindle::python::DimList, const_name("Sequence[int]"))
  bool from_python(handle src, uint8_t, cleanup_list*) noexcept {
    PyObject* o = src.ptr();
    int64_t v;
    value.dims.clear();
    value.src = o;
    if (!PyBool_Check(o) && kindle::python::int_from_py(o, v)) { value.dims.push_back(v); return true; }
    if (!PyTuple_Check(o) && !PyList_Check(o)) return false;
    PyObject* seq = PySequence_Fast(o, "");
    if (!seq) { PyErr_Clear(); return false; }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject** items = PySequence_Fast_ITEMS(seq);
    bool ok = true;
    for (Py_ssize_t i = 0; i < n && ok; ++i) {
      ok = !PyBool_Check(items[i]) && kindle::python::int_from_py(items[i], v);
      if (ok) value.dims.push_back(v);
    }
    Py_DECREF(seq);
    return ok;
  }
  static handle from_cpp(const kindle::python::DimList& d, rv_policy, cleanup_list*) noexcept {
    PyObject* t = PyTuple_New(Py_ssize_t(d.dims.size()));
    for (size_t i = 0; i < d.dims.size(); ++i) PyTuple_SET_ITEM(t, Py_ssize_t(i), PyLong_FromLongLong(d.dims[i]));
    return t;
  }
};

}  // namespace nanobind::detail
