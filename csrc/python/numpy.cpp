// NumPy and DLPack interop (memory is shared, never copied, where the API promises it), and
// kindle.tensor / as_tensor from nested Python data.
#include <limits>
#include <nanobind/ndarray.h>

#include "kindle/cuda.h"
#include "python/bind_common.h"

namespace kindle::python {
namespace {

using AnyArray = nb::ndarray<nb::device::cpu>;

DType dtype_from_nb(nb::dlpack::dtype d) {
  using nb::dlpack::dtype_code;
  auto code = dtype_code(d.code);
  if (code == dtype_code::Bool) return kBool;
  if (code == dtype_code::Float) {
    if (d.bits == 16) return kFloat16;
    if (d.bits == 32) return kFloat32;
    if (d.bits == 64) return kFloat64;
  }
  if (code == dtype_code::Complex) {
    if (d.bits == 64) return kComplex64;
    if (d.bits == 128) return kComplex128;
  }
  if (code == dtype_code::Bfloat && d.bits == 16) return kBFloat16;
  if (code == dtype_code::Int) {
    if (d.bits == 8) return kInt8;
    if (d.bits == 16) return kInt16;
    if (d.bits == 32) return kInt32;
    if (d.bits == 64) return kInt64;
  }
  if (code == dtype_code::UInt && d.bits == 8) return kUInt8;
  if (code == dtype_code::UInt && d.bits == 1) return kBool;
  throw TypeError(detail::str_cat("can't convert an array of dtype code ", int(d.code), " with ", int(d.bits),
                                  " bits; the only supported types are: complex128, complex64, float64, float32, float16, "
                                  "bfloat16, int64, int32, int16, int8, uint8, and bool."));
}

nb::dlpack::dtype nb_dtype(DType t) {
  switch (t) {
    case kBool: return nb::dtype<bool>();
    case kUInt8: return nb::dtype<uint8_t>();
    case kInt8: return nb::dtype<int8_t>();
    case kInt16: return nb::dtype<int16_t>();
    case kInt32: return nb::dtype<int32_t>();
    case kInt64: return nb::dtype<int64_t>();
    case kFloat16: return {uint8_t(nb::dlpack::dtype_code::Float), 16, 1};
    case kBFloat16: return {uint8_t(nb::dlpack::dtype_code::Bfloat), 16, 1};
    case kFloat32: return nb::dtype<float>();
    case kFloat64: return nb::dtype<double>();
    case kComplex64: return {uint8_t(nb::dlpack::dtype_code::Complex), 64, 1};
    case kComplex128: return {uint8_t(nb::dlpack::dtype_code::Complex), 128, 1};
  }
  return nb::dtype<float>();
}

void release_array(void* ctx, void*, size_t) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE st = PyGILState_Ensure();
  delete static_cast<AnyArray*>(ctx);
  PyGILState_Release(st);
}

// Wraps an array's memory; the tensor keeps the array alive.
Tensor wrap_array(const AnyArray& a, const char* op) {
  DType dt = dtype_from_nb(a.dtype());
  DimVector sizes, strides;
  int64_t span = 1;
  bool empty = false;
  for (size_t i = 0; i < a.ndim(); ++i) {
    sizes.push_back(int64_t(a.shape(i)));
    int64_t st = int64_t(a.stride(i));
    KINDLE_CHECK_VALUE(st >= 0 || a.shape(i) <= 1, op, ": at least one stride in the given numpy array is negative, "
                       "and tensors with negative strides are not currently supported. (You can probably work around "
                       "this by making a copy of your array with array.copy().)");
    strides.push_back(std::max<int64_t>(st, 0));
    if (a.shape(i) == 0) empty = true;
    else span += (int64_t(a.shape(i)) - 1) * std::max<int64_t>(st, 0);
  }
  size_t nbytes = empty ? 0 : size_t(span) * itemsize(dt);
  auto* keep = new AnyArray(a);
  DataPtr ptr{const_cast<void*>(a.data()), &release_array, keep};
  Storage storage(new StorageImpl(ptr, nbytes, kCPU));
  return Tensor(intrusive_ptr<TensorImpl>::make(std::move(storage), dt, sizes, strides, 0));
}

nb::object to_numpy(nb::handle self_obj, bool force) {
  const Tensor& t = *nb::inst_ptr<Tensor>(self_obj);
  if (!t.device().is_cpu()) {
    KINDLE_CHECK_TYPE(force, "can't convert ", t.device(), " device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.");
    nb::object host = nb::cast(t.detach()._to_device(kCPU));
    return to_numpy(host, force);
  }
  KINDLE_CHECK(!t.requires_grad() || force, "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.");
  KINDLE_CHECK_TYPE(t.dtype() != kBFloat16, "numpy(): Got unsupported ScalarType BFloat16 (NumPy has no bfloat16)");
  std::vector<size_t> shape;
  std::vector<int64_t> strides;
  for (int64_t i = 0; i < t.dim(); ++i) { shape.push_back(size_t(t.sizes()[i])); strides.push_back(t.strides()[i]); }
  nb::object owner = nb::cast(t.detach());  // holds the storage for as long as NumPy needs it
  t.impl()->storage()->mark_exported();     // NumPy may write it (Note [Derived data cache])
  nb::ndarray<nb::numpy> arr(t.data_ptr(), t.dim(), shape.data(), owner, strides.data(), nb_dtype(t.dtype()));
  return nb::cast(arr, nb::rv_policy::reference);
}

// Nested Python data -> tensor.
constexpr int64_t kMaxTensorDims = 64;
Tensor from_data(nb::handle data, std::optional<DType> dtype, bool copy);

// kind: the category of the Python scalars seen (0 bool, 1 int, 2 float, 3 complex); np_dtype: the promoted
// dtype of the NumPy scalars seen, which keep their dtype as in PyTorch.
// Every scalar must sit at one depth (leaf_depth, -1 until the first is seen) and every sequence
// above it: a ragged list ([[1, 2], 3]) would otherwise pass with its shape taken from the first
// branch, and fill() would write fewer elements than the tensor has.
void infer(nb::handle h, int64_t depth, DimVector& shape, int& kind, std::optional<DType>& np_dtype,
           int64_t& leaf_depth) {
  PyObject* o = h.ptr();
  auto leaf = [&] {
    if (leaf_depth < 0) leaf_depth = depth;
    if (depth != leaf_depth) throw TypeError("tensor(): not a sequence: a scalar " + std::string(nb::repr(h).c_str()) +
                                             " where the data before it has a sequence (a ragged nested list)");
  };
  // A list nested deeper than any tensor (or one that contains itself) must not recurse on.
  KINDLE_CHECK_VALUE(depth <= kMaxTensorDims, "tensor(): too many dimensions '", nb::inst_name(h).c_str(),
                     "' (more than ", kMaxTensorDims, " levels of nesting)");
  if (!PySequence_Check(o) && !nb::isinstance<Tensor>(h) && PyObject_HasAttrString(o, "dtype") &&
      PyObject_HasAttrString(o, "item")) {
    leaf();
    DType d = from_data(h, std::nullopt, true).dtype();
    np_dtype = np_dtype ? promote_types(*np_dtype, d) : d;
    return;
  }
  if (PyBool_Check(o)) { leaf(); kind = std::max(kind, 0); return; }
  if (PyLong_Check(o)) { leaf(); kind = std::max(kind, 1); return; }
  if (PyFloat_Check(o)) { leaf(); kind = std::max(kind, 2); return; }
  if (PyComplex_Check(o)) { leaf(); kind = std::max(kind, 3); return; }
  if (nb::isinstance<Tensor>(h)) {
    leaf();
    const Tensor& t = nb::cast<const Tensor&>(h);
    KINDLE_CHECK_VALUE(t.numel() == 1, "only one element tensors can be converted to Python scalars");
    kind = std::max(kind, is_complex(t.dtype()) ? 3 : t.is_floating_point() ? 2 : t.dtype() == kBool ? 0 : 1);
    return;
  }
  if (PySequence_Check(o) && !PyUnicode_Check(o) && !PyBytes_Check(o)) {
    Py_ssize_t n = PySequence_Size(o);
    if (leaf_depth >= 0 && depth >= leaf_depth)
      throw TypeError(std::string("tensor(): '") + nb::inst_name(h).c_str() + "' object cannot be interpreted as a "
                      "number: a sequence where the data before it has a scalar (a ragged nested list)");
    if (int64_t(shape.size()) <= depth) shape.push_back(int64_t(n));
    else KINDLE_CHECK_VALUE(shape[depth] == int64_t(n), "expected sequence of length ", shape[depth], " at dim ", depth, " (got ", n, ")");
    for (Py_ssize_t i = 0; i < n; ++i)
      infer(nb::steal(PySequence_GetItem(o, i)), depth + 1, shape, kind, np_dtype, leaf_depth);
    return;
  }
  if (PyIndex_Check(o)) { leaf(); kind = std::max(kind, 1); return; }
  if (PyNumber_Check(o)) { leaf(); kind = std::max(kind, 2); return; }
  if (PyUnicode_Check(o) || PyBytes_Check(o))  // (torch: a TypeError for text, a RuntimeError for the rest)
    throw TypeError(detail::str_cat("new(): invalid data type '", nb::inst_name(h).c_str(), "'"));
  throw Error(detail::str_cat("Could not infer dtype of ", nb::inst_name(h).c_str()));
}

void fill(nb::handle h, char*& p, DType dt) {
  PyObject* o = h.ptr();
  if (PySequence_Check(o) && !nb::isinstance<Tensor>(h)) {
    Py_ssize_t n = PySequence_Size(o);
    for (Py_ssize_t i = 0; i < n; ++i) fill(nb::steal(PySequence_GetItem(o, i)), p, dt);
    return;
  }
  Scalar s;
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow) {
      KINDLE_CHECK_VALUE(is_floating_point(dt), "tensor(): Overflow when unpacking long long: ",
                         nb::str(h).c_str(), " does not fit in ", dt);
      s = Scalar(PyLong_AsDouble(o));
      if (PyErr_Occurred()) { PyErr_Clear(); s = Scalar(std::numeric_limits<double>::infinity()); }
    } else {
      s = Scalar(int64_t(v));
    }
  } else {
    s = nb::cast<Scalar>(h);
  }
  // Integers and NaN must fit an integer dtype (PyTorch raises); float dtypes take inf.
  if (!is_floating_point(dt) && !is_complex(dt)) check_scalar_fits(s, dt, "tensor()");
  dispatch_all_and_complex(dt, "tensor", [&](auto tag) {
    using T = typename decltype(tag)::type;
    *reinterpret_cast<T*>(p) = s.to<T>();
  });
  p += itemsize(dt);
}

Tensor from_data(nb::handle data, std::optional<DType> dtype, bool copy) {
  if (nb::isinstance<Tensor>(data)) {
    const Tensor& t = nb::cast<const Tensor&>(data);
    if (!copy) return dtype && *dtype != t.dtype() ? t.to(*dtype) : t;  // as_tensor: t itself, graph and all
    // tensor(t): a new leaf, as t.detach().clone() (torch warns that this is what it does)
    if (PyErr_WarnEx(PyExc_UserWarning, "To copy construct from a tensor, it is recommended to use "
                     "sourceTensor.detach().clone() or sourceTensor.detach().clone().requires_grad_(True), rather "
                     "than torch.tensor(sourceTensor).", 1) < 0)
      throw nb::python_error();
    Tensor d = t.detach();
    return dtype && *dtype != t.dtype() ? d.to(*dtype) : d.clone();
  }
  AnyArray arr;
  // NumPy scalars (np.float64(2.5), np.int8(3)) keep their dtype: go through a 0-d array.
  if (PyObject_HasAttrString(data.ptr(), "dtype") &&
      !PySequence_Check(data.ptr()) && !nb::isinstance<Tensor>(data))
    return from_data(nb::module_::import_("numpy").attr("asarray")(data), dtype, true);
  if (!PyList_Check(data.ptr()) && !PyTuple_Check(data.ptr()) && nb::try_cast<AnyArray>(data, arr, false)) {
    Tensor t = wrap_array(arr, "tensor");
    if (dtype && *dtype != t.dtype()) return t.to(*dtype);
    return copy ? t.clone() : t;
  }
  DimVector shape;
  int kind = -1;
  std::optional<DType> np_dtype;
  int64_t leaf_depth = -1;
  infer(data, 0, shape, kind, np_dtype, leaf_depth);
  // [[], [[]]]-like data: a deeper empty branch after a shallower one.
  KINDLE_CHECK_VALUE(leaf_depth < 0 || leaf_depth == int64_t(shape.size()), "tensor(): ragged nested sequence: "
                     "scalars at depth ", leaf_depth, " but sequences ", shape.size(), " deep");
  DType py_dt = kind == 3 ? to_complex_type(default_dtype()) : kind == 2 ? default_dtype()
              : kind == 1 ? kInt64 : kind == 0 ? kBool : default_dtype();
  DType dt = dtype.value_or(np_dtype ? (kind >= 0 ? promote_types(*np_dtype, py_dt) : *np_dtype) : py_dt);
  Tensor t = empty_tensor(shape, dt);
  char* p = static_cast<char*>(t.data_ptr());
  if (t.numel()) fill(data, p, dt);
  return t;
}

}  // namespace

// What a TensorArg converts: a NumPy array where a Tensor is expected (t + ndarray) becomes a
// tensor (copied), as in PyTorch; a number (NumPy's scalars included) a wrapped number.
bool tensor_from_number_or_array(nb::handle h, Tensor& out) {
  nb::detail::make_caster<Scalar> number;
  PyObject* o = h.ptr();
  if (PyLong_Check(o) || PyFloat_Check(o) || PyBool_Check(o) || PyComplex_Check(o)) {  // the common case first
    if (!number.from_python(h, 0, nullptr)) return false;
    out = scalar_to_tensor(number.value);
    return true;
  }
  nb::ndarray<nb::numpy, nb::device::cpu> a;
  if (nb::try_cast(h, a, false)) {
    out = wrap_array(AnyArray(a), "tensor").clone();
    return true;
  }
  if (!number.from_python(h, uint8_t(nb::detail::cast_flags::convert), nullptr)) return false;
  out = scalar_to_tensor(number.value);
  return true;
}

// The array for from_numpy / from_dlpack. A read-only one (np.asarray of a PIL image, a broadcast
// view) is wrapped too, as torch does, with torch's warning: nothing stops a write through the
// tensor. What nanobind cannot take (object arrays, byte-swapped or unsigned 16-64-bit ones) is a
// TypeError naming the dtype.
AnyArray cast_array(nb::handle a, const char* op) {
  AnyArray arr;
  if (nb::try_cast<AnyArray>(a, arr, false)) return arr;
  nb::ndarray<nb::ro, nb::device::cpu> ro;
  if (nb::try_cast(a, ro, false)) {
    static bool warned = false;  // (torch warns once per program)
    if (!warned) {
      warned = true;
      if (PyErr_WarnEx(PyExc_UserWarning, "The given NumPy array is not writable, and Kindle does not support "
                       "non-writable tensors. This means writing to this tensor will result in undefined behavior. "
                       "You may want to copy the array to protect its data or make it writable before converting it "
                       "to a tensor. This type of warning will be suppressed for the rest of this program.", 1) < 0)
        throw nb::python_error();
    }
    return AnyArray(ro);
  }
  std::string what = nb::hasattr(a, "dtype") ? nb::cast<std::string>(a.attr("dtype").attr("__str__")())
                                             : std::string(nb::inst_name(a).c_str());
  throw TypeError(detail::str_cat(op, ": can't convert np.ndarray of type ", what, " (byte order and layout as "
                                  "given). The only supported types are: complex128, complex64, float64, float32, "
                                  "float16, bfloat16, int64, int32, int16, int8, uint8, and bool."));
}

void bind_numpy(nb::module_& m, nb::class_<Tensor>& cls) {
  m.def("from_numpy", [](nb::handle a) {
    nb::object np = nb::module_::import_("numpy");
    KINDLE_CHECK_TYPE(nb::isinstance(a, np.attr("ndarray")), "expected np.ndarray (got ", nb::inst_name(a).c_str(), ")");
    return wrap_array(cast_array(a, "from_numpy"), "from_numpy");
  }, nb::arg("ndarray"));
  m.def("from_dlpack", [](nb::handle ext) {
    if (nb::isinstance<Tensor>(ext)) return nb::cast<Tensor>(ext).detach();
    return wrap_array(cast_array(ext, "from_dlpack"), "from_dlpack");
  }, nb::arg("ext_tensor"));
  m.def("tensor", [](nb::handle data, std::optional<DType> dtype, std::optional<Device> device, bool requires_grad) {
    Tensor t = from_data(data, dtype, true);
    device = factory_device(device);
    if (device && !device->is_cpu()) {
      check_device_usable(*device, "tensor");
      t = t._to_device(*device);
    }
    if (requires_grad) {
      KINDLE_CHECK(t.is_floating_point() || is_complex(t.dtype()), "Only Tensors of floating point and complex dtype can require gradients");
      t.impl()->requires_grad = true;
    }
    return t;
  }, nb::arg("data").none(), nb::kw_only(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none(),
     nb::arg("requires_grad") = false);
  m.def("as_tensor", [](nb::handle data, std::optional<DType> dtype, std::optional<Device> device) -> nb::object {
    if (nb::isinstance<Tensor>(data)) {  // the same object where nothing changes (torch: `as_tensor(t) is t`)
      const Tensor& src = nb::cast<const Tensor&>(data);
      if ((!dtype || *dtype == src.dtype()) && (!device || factory_device(device) == src.device()))
        return nb::borrow(data);
    }
    Tensor t = from_data(data, dtype, false);
    device = factory_device(device);
    return nb::cast(device && t.device() != *device ? t._to_device(*device) : t);
  }, nb::arg("data").none(), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  cls.def("numpy", [](nb::handle self, bool force) { return to_numpy(self, force); }, nb::kw_only(), nb::arg("force") = false);
  cls.def("__array__", [](nb::handle self, nb::handle dtype, nb::handle) {
    nb::object a = to_numpy(self, false);
    return dtype.is_none() ? a : a.attr("astype")(dtype);
  }, nb::arg("dtype").none() = nb::none(), nb::arg("copy").none() = nb::none());
  // DLPack through nanobind's own array type, which (unlike NumPy) also carries bfloat16.
  cls.def("__dlpack__", [](nb::handle self_obj, nb::kwargs kw) {
    const Tensor& t = *nb::inst_ptr<Tensor>(self_obj);
    std::vector<size_t> shape;
    std::vector<int64_t> strides;
    for (int64_t i = 0; i < t.dim(); ++i) { shape.push_back(size_t(t.sizes()[i])); strides.push_back(t.strides()[i]); }
    nb::object owner = nb::cast(t.detach());
    t.impl()->storage()->mark_exported();
    nb::ndarray<> arr(t.data_ptr(), size_t(t.dim()), shape.data(), owner, strides.data(), nb_dtype(t.dtype()));
    return nb::cast(arr, nb::rv_policy::reference);  // a "dltensor" capsule
  });
  cls.def("__dlpack_device__", [](const Tensor&) { return std::make_tuple(1, 0); });
}

}  // namespace kindle::python
