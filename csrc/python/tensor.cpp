// Tensor's Python surface that is not a table op: attributes, conversions, Python protocols
// and operators. Operators call the C++ ops directly (no Python-level dispatch).
#include <nanobind/stl/string_view.h>

#include "kindle/autocast.h"
#include "kindle/autograd.h"
#include "kindle/cuda.h"
#include "kindle/profiler.h"
#include "python/bind_common.h"
#include "python/torch_function.h"
#include "kindle/shared_memory.h"

namespace kindle::python {
namespace {

nb::object size_type() {
  static nb::object* t = nullptr;
  if (!t) t = new nb::object(nb::module_::import_("kindle").attr("Size"));
  return *t;
}

// Through tuple's own constructor: the items are ints already, so Size.__new__'s checks (which
// convert and validate what users pass) would only add their cost to every .shape.
nb::object make_size(IntArrayRef s) {
  PyObject* tup = PyTuple_New(Py_ssize_t(s.size()));
  for (size_t i = 0; i < s.size(); ++i) PyTuple_SET_ITEM(tup, Py_ssize_t(i), PyLong_FromLongLong(s[i]));
  nb::object args = nb::steal(PyTuple_Pack(1, tup));
  Py_DECREF(tup);
  PyObject* r = PyTuple_Type.tp_new(reinterpret_cast<PyTypeObject*>(size_type().ptr()), args.ptr(), nullptr);
  if (!r) throw nb::python_error();
  return nb::steal(r);
}

nb::object tolist_rec(const Tensor& t, const char* p, int64_t d) {
  if (d == t.dim()) {
    return dispatch_all_and_complex(t.dtype(), "tolist", [&](auto tag) -> nb::object {
      using T = typename decltype(tag)::type;
      return nb::cast(Scalar(*reinterpret_cast<const T*>(p)));
    });
  }
  nb::list l;
  int64_t st = t.strides()[d] * int64_t(t.element_size());
  for (int64_t i = 0; i < t.sizes()[d]; ++i) l.append(tolist_rec(t, p + i * st, d + 1));
  return l;
}

// A complex tensor cast to a real type keeps the real parts: torch's UserWarning says so.
Tensor cast_warning_if_complex(const Tensor& t, DType to) {
  if (t.is_complex() && !is_complex(to))
    if (PyErr_WarnEx(PyExc_UserWarning, "Casting complex values to real discards the imaginary part", 1) < 0)
      throw nb::python_error();
  return t.to(to);
}

// Tensor.to(...): to(dtype), to(device), to(device, dtype), to(other), with keyword forms. A
// change of device comes first; the rest applies on the target device.
nb::object to_any(nb::handle_t<Tensor> self_obj, nb::args args, nb::kwargs kwargs) {
  std::optional<DType> dtype;
  std::optional<Device> device;
  bool copy = false, non_blocking = false;
  nb::handle memory_format;
  auto take = [&](nb::handle h) {
    DType dt;
    if (nb::try_cast<DType>(h, dt)) { dtype = dt; return; }
    Tensor other;
    if (nb::try_cast<Tensor>(h, other, false)) { dtype = other.dtype(); device = other.device(); return; }
    Device dev;
    if (nb::try_cast<Device>(h, dev)) {
      check_device_usable(dev, "to");
      device = dev;
      return;
    }
    if (h.is_none()) return;
    throw TypeError(detail::str_cat("to() received an invalid combination of arguments: got an argument of type ",
                                    nb::inst_name(h).c_str()));
  };
  for (nb::handle h : args) take(h);
  for (auto [k, v] : kwargs) {
    std::string key = nb::cast<std::string>(k);
    if (key == "dtype" || key == "device" || key == "other") take(v);
    else if (key == "copy") copy = nb::cast<bool>(v);
    else if (key == "memory_format") memory_format = v;
    else if (key == "non_blocking") non_blocking = nb::cast<bool>(v);
    else throw TypeError("to() got an unexpected keyword argument '" + key + "'");
  }
  nb::object self_ref = nb::borrow(self_obj);
  const Tensor& input = *nb::inst_ptr<Tensor>(self_obj);
  if (device && (device->type() != input.device().type() || (device->index() >= 0 && device->index() != input.device().index()))) {
    self_ref = nb::cast(input._to_device(*device, non_blocking));
    copy = false;  // the move made the copy
  }
  const Tensor& self = *nb::inst_ptr<Tensor>(self_ref);
  int rank = memory_format.is_valid() ? channels_last_rank(memory_format, "to") : -1;
  if (rank >= 0 && rank != 0) {
    // channels_last: the format's own strides, even where size-1 dimensions allow others
    Tensor src = dtype && *dtype != self.dtype() ? cast_warning_if_complex(self, *dtype) : self;
    if (!copy && has_channels_last_strides(src, false) && src.dim() == rank) return nb::cast(src);
    return nb::cast(to_channels_last(src, rank, "to"));
  }
  if (rank == 0) {  // contiguous_format
    Tensor src = dtype && *dtype != self.dtype() ? cast_warning_if_complex(self, *dtype) : self;
    if (!copy && src.is_contiguous()) return nb::cast(src);
    return nb::cast(src.is_contiguous() ? src.clone() : src.contiguous());
  }
  if ((!dtype || *dtype == self.dtype()) && !copy) return self_ref;  // nothing (more) changes
  if (!dtype) return nb::cast(self.clone());
  if (self.is_complex() && !is_complex(*dtype)) return nb::cast(cast_warning_if_complex(self, *dtype));
  return nb::cast(self.to(*dtype, copy));
}

}  // namespace

void bind_tensor(nb::module_& m, nb::class_<Tensor>& cls) {
  m.attr("_tensor_class") = cls;
  cls.def_prop_ro("shape", [](const Tensor& t) { return make_size(t.sizes()); });
  cls.def_prop_ro("dtype", [](const Tensor& t) { return t.dtype(); });
  cls.def_prop_ro("device", [](const Tensor& t) { return t.device(); });
  cls.def_prop_ro("ndim", [](const Tensor& t) { return t.dim(); });
  cls.def_prop_ro("is_cuda", [](const Tensor& t) { return t.device().type() == DeviceType::CUDA; });
  cls.def_prop_ro("is_cpu", [](const Tensor& t) { return t.device().is_cpu(); });
  cls.def_prop_ro("is_meta", [](const Tensor& t) { return t.device().is_meta(); });
  cls.def_prop_ro("is_sparse", [](const Tensor&) { return false; });
  cls.def_prop_ro("is_quantized", [](const Tensor&) { return false; });
  cls.def_prop_ro("itemsize", [](const Tensor& t) { return t.element_size(); });
  cls.def_prop_ro("nbytes", [](const Tensor& t) { return t.nbytes(); });
  cls.def_prop_ro("T", [](const Tensor& t) {
    DimVector p;
    for (int64_t i = t.dim() - 1; i >= 0; --i) p.push_back(i);
    return t.permute(p);
  });
  cls.def_prop_ro("mT", [](const Tensor& t) {
    KINDLE_CHECK(t.dim() >= 2, "tensor.mT is only supported on matrices or batches of matrices. Got ", t.dim(), "-D tensor.");
    return t.transpose(-2, -1);
  });
  cls.def_prop_ro("H", [](const Tensor& t) { return t.dim() < 2 ? t.view(t.sizes()).conj() : t.t().conj(); });
  cls.def_prop_ro("mH", [](const Tensor& t) { return t.transpose(-2, -1).conj(); });
  cls.def_prop_rw("requires_grad", [](const Tensor& t) { return t.requires_grad(); },
                  [](const Tensor& t, bool r) { t.requires_grad_(r); });
  cls.def("requires_grad_", [](nb::handle_t<Tensor> h, bool r) {
    nb::inst_ptr<Tensor>(h)->requires_grad_(r);
    return nb::borrow(h);
  }, nb::arg("requires_grad") = true);
  cls.def_prop_rw("data", [](const Tensor& t) { return t.detach(); },
                  [](const Tensor& t, const Tensor& o) { t.impl()->set_data(*o.impl()); });
  cls.def("view", [](const Tensor& t, DType d) { return view_dtype(t, d); }, nb::arg("dtype"));
  // Like torch.Tensor._make_subclass: an instance of cls (e.g. nn.Parameter) that is a fresh leaf
  // over data's storage.
  cls.def_static("_make_subclass", [](nb::type_object cls, const Tensor& data, bool require_grad) {
    nb::object self = nb::inst_alloc(cls);
    new (nb::inst_ptr<Tensor>(self)) Tensor(data.detach());
    nb::inst_mark_ready(self);
    nb::inst_ptr<Tensor>(self)->requires_grad_(require_grad);
    return self;
  }, nb::arg("cls"), nb::arg("data"), nb::arg("require_grad") = false);
  // Like torch's Tensor.as_subclass: the same tensor (data, autograd history) as an instance of a
  // Tensor subclass; cls.__init__ is not called.
  cls.def("as_subclass", [](nb::handle_t<Tensor> h, nb::handle cls_) {
    PyObject* tensor_type = nb::type<Tensor>().ptr();
    KINDLE_CHECK_TYPE(PyType_Check(cls_.ptr()) && PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls_.ptr()),
                                                                   reinterpret_cast<PyTypeObject*>(tensor_type)),
                      "as_subclass(): argument 'cls' must be a subclass of Tensor, not ",
                      nb::str(nb::handle(cls_)).c_str());
    nb::object self = nb::inst_alloc(nb::borrow<nb::type_object>(cls_));
    new (nb::inst_ptr<Tensor>(self)) Tensor(*nb::inst_ptr<Tensor>(h));
    nb::inst_mark_ready(self);
    return self;
  }, nb::arg("cls"));
  cls.def("share_memory_", [](nb::handle_t<Tensor> h) { share_memory_(*nb::inst_ptr<Tensor>(h)); return nb::borrow(h); });
  cls.def("is_shared", [](const Tensor& t) { return is_shared(t); });
  // Storages for Python's UntypedStorage / TypedStorage (python/kindle/storage.py): the whole
  // storage as a byte tensor, and set_, which points a tensor at part of such a storage (a byte
  // view: a storage slice) after checking that the geometry stays inside it (PyTorch would grow
  // the storage instead).
  m.def("_storage_bytes", [](const Tensor& t) {
    const Storage& st = t.impl()->storage();
    int64_t n = int64_t(st->nbytes()), one = 1;
    return Tensor(intrusive_ptr<TensorImpl>::make(st, kUInt8, IntArrayRef(n), IntArrayRef(one), 0));
  });
  m.def("_set_storage", [](const Tensor& self, const Tensor& bytes, int64_t offset, std::vector<int64_t> sizes,
                           std::vector<int64_t> strides) {
    KINDLE_CHECK(self.defined() && bytes.defined(), "set_: undefined tensor");
    KINDLE_CHECK(!(autograd::GradMode::is_enabled() && self.requires_grad()), "set_: ", self.is_leaf() ? "a leaf Variable" :
                 "a tensor", " that requires grad cannot be pointed at another storage while grad mode is enabled "
                 "(wrap the call in torch.no_grad())");
    KINDLE_CHECK(bytes.dtype() == kUInt8 && bytes.dim() == 1 && bytes.stride(0) == 1, "set_: expected a storage's "
                 "bytes, got a tensor of dtype ", dtype_name(bytes.dtype()), " and shape ", bytes.sizes());
    KINDLE_CHECK(sizes.size() == strides.size(), "set_: got ", sizes.size(), " sizes but ", strides.size(), " strides");
    KINDLE_CHECK(offset >= 0, "set_: storage offset must be non-negative, got ", offset);
    KINDLE_CHECK(self.device() == bytes.device(), "set_: expected a storage on ", self.device().str(), ", got one on ",
                 bytes.device().str());
    const int64_t item = int64_t(itemsize(self.dtype())), first_byte = bytes.storage_offset();
    KINDLE_CHECK(first_byte % item == 0, "set_: the storage slice starts at byte ", first_byte,
                 ", not a multiple of the element size ", item, " of ", dtype_name(self.dtype()));
    int64_t last = offset;
    bool empty = false;
    for (size_t i = 0; i < sizes.size(); ++i) {
      KINDLE_CHECK(sizes[i] >= 0, "set_: negative size ", sizes[i], " at dim ", i);
      KINDLE_CHECK(strides[i] >= 0, "set_: negative stride ", strides[i], " at dim ", i);
      if (sizes[i] == 0) empty = true;
      else last += (sizes[i] - 1) * strides[i];
    }
    KINDLE_CHECK(empty || (last + 1) * item <= bytes.numel(), "set_: a tensor of dtype ", dtype_name(self.dtype()),
                 " with size ", IntArrayRef(sizes), ", stride ", IntArrayRef(strides), " and storage offset ", offset,
                 " needs ", (last + 1) * item, " bytes, but the storage holds ", bytes.numel());
    TensorImpl view(bytes.impl()->storage(), self.dtype(), sizes, strides, first_byte / item + offset);
    self.impl()->set_data(view);
    self.bump_version();
  }, nb::arg("self"), nb::arg("bytes"), nb::arg("offset"), nb::arg("sizes"), nb::arg("strides"));
  m.def("_share_fd", [](const Tensor& t) {
    return std::make_tuple(shared_memory_fd(t), t.impl()->storage()->nbytes());
  });
  m.def("_tensor_from_fd", [](int fd, size_t nbytes, DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides,
                              int64_t offset) { return tensor_from_shared_fd(fd, nbytes, dtype, sizes, strides, offset); },
        nb::arg("fd"), nb::arg("nbytes"), nb::arg("dtype"), nb::arg("sizes"), nb::arg("strides"), nb::arg("storage_offset"));
  cls.def("size", [](const Tensor& t) { return make_size(t.sizes()); });
  cls.def("size", [](const Tensor& t, int64_t d) { return t.size(d); }, nb::arg("dim"));
  cls.def("stride", [](const Tensor& t) { return nb::tuple(nb::cast(t.strides().vec())); });
  cls.def("stride", [](const Tensor& t, int64_t d) { return t.stride(d); }, nb::arg("dim"));
  cls.def("dim", &Tensor::dim);
  cls.def("ndimension", &Tensor::dim);
  cls.def("numel", &Tensor::numel);
  cls.def("nelement", &Tensor::numel);
  cls.def("element_size", &Tensor::element_size);
  cls.def("storage_offset", &Tensor::storage_offset);
  // (which storage, and its bytes) for kindle.save's sharing of storages; no pointer to the bytes
  cls.def("_storage_identity", [](const Tensor& t) {
    return std::make_tuple(uintptr_t(t.impl()->storage().get()), t.impl()->storage()->nbytes());
  });
  cls.def("data_ptr", [](const Tensor& t) {  // the device's address, which ctypes may write through
    t.impl()->storage()->mark_exported();
    return uintptr_t(t.raw_data_ptr());
  });
  cls.def("is_contiguous", [](const Tensor& t, nb::handle memory_format) {
    int rank = channels_last_rank(memory_format, "is_contiguous");
    KINDLE_CHECK(rank != -1, "is_contiguous: preserve memory format is unsupported by the contiguous operator");
    return rank == 0 ? t.is_contiguous() : t.dim() == rank && has_channels_last_strides(t, true);
  }, nb::arg("memory_format").none() = nb::none());
  cls.def("is_floating_point", &Tensor::is_floating_point);
  cls.def("is_complex", &Tensor::is_complex);
  cls.def("is_complex", [](const Tensor&) { return false; });
  cls.def("is_signed", [](const Tensor& t) { return is_signed(t.dtype()); });
  cls.def("item", [](const Tensor& t) { return t.item(); });
  cls.def("tolist", [](const Tensor& t) {
    Tensor h = t._to_device(kCPU);
    return tolist_rec(h, static_cast<const char*>(h.data_ptr()), 0);
  });
  cls.def("to", [](nb::handle_t<Tensor> self_obj, nb::args args, nb::kwargs kwargs) -> nb::object {
    if (torch_function_hint() && override_in({self_obj.ptr(), args.ptr()})) [[unlikely]] {  // as given
      TorchFunctionCall call;
      call.arg(self_obj);
      call.spread(args);
      for (auto [k, v] : kwargs) call.keywords[k] = v;
      return call.dispatch(torch_function_target('t', "to"));
    }
    return to_any(self_obj, args, kwargs);
  });
  cls.def("type", [](nb::handle_t<Tensor> t_obj, DType d) { return self_or_new(t_obj, nb::inst_ptr<Tensor>(t_obj)->to(d)); },
          nb::arg("dtype"));
  cls.def("type", [](const Tensor& t) {  // the legacy type name, as torch's Tensor.type()
    switch (t.dtype()) {
      case kFloat32: return "kindle.FloatTensor";
      case kFloat64: return "kindle.DoubleTensor";
      case kFloat16: return "kindle.HalfTensor";
      case kBFloat16: return "kindle.BFloat16Tensor";
      case kInt8: return "kindle.CharTensor";
      case kInt16: return "kindle.ShortTensor";
      case kInt32: return "kindle.IntTensor";
      case kInt64: return "kindle.LongTensor";
      case kUInt8: return "kindle.ByteTensor";
      default: return "kindle.BoolTensor";
    }
  });
  cls.def("cpu", [](nb::handle_t<Tensor> h, bool non_blocking) -> nb::object {
    const Tensor& t = *nb::inst_ptr<Tensor>(h);
    if (t.device().is_cpu()) return nb::borrow(h);
    return nb::cast(t._to_device(kCPU, non_blocking));
  }, nb::arg("non_blocking") = false);
  cls.def("float", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "float", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return self_or_new(t_obj, cast_warning_if_complex(t, kFloat32));
  });
  cls.def("double", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "double", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return self_or_new(t_obj, cast_warning_if_complex(t, kFloat64));
  });
  cls.def("half", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "half", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return self_or_new(t_obj, cast_warning_if_complex(t, kFloat16));
  });
  cls.def("bfloat16", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "bfloat16", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return self_or_new(t_obj, cast_warning_if_complex(t, kBFloat16));
  });
#define KINDLE_DTYPE_METHOD(name, dtype)                                 \
  cls.def(name, [](nb::handle_t<Tensor> t_obj) -> nb::object {           \
    KINDLE_TORCH_FUNCTION('t', name, t_obj.ptr());                        \
    return self_or_new(t_obj, nb::inst_ptr<Tensor>(t_obj)->to(dtype));   \
  });
  KINDLE_DTYPE_METHOD("long", kInt64)
  KINDLE_DTYPE_METHOD("int", kInt32)
  KINDLE_DTYPE_METHOD("short", kInt16)
  KINDLE_DTYPE_METHOD("char", kInt8)
  KINDLE_DTYPE_METHOD("byte", kUInt8)
  KINDLE_DTYPE_METHOD("bool", kBool)
#undef KINDLE_DTYPE_METHOD
  cls.def("type_as", [](nb::handle_t<Tensor> t_obj, nb::handle_t<Tensor> o) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "type_as", t_obj.ptr(), o.ptr());
    return nb::cast(nb::inst_ptr<Tensor>(t_obj)->to(nb::inst_ptr<Tensor>(o)->dtype()));
  });
  // new_zeros / new_ones / new_empty / new_full: the tensor's dtype unless given. An override
  // gets the call as Tensor.new_*(self, size, [fill_value,] dtype=...).
  auto new_override = [](const char* name, nb::handle self, const DimList& size, const Scalar* fill,
                         std::optional<DType> dtype) {
    TorchFunctionCall call;
    call.arg(self);
    call.arg(py_source(size));
    if (fill) call.arg(nb::cast(*fill));
    call.kwarg("dtype", nb::cast(dtype));
    return call.dispatch(torch_function_target('t', name));
  };
// (on the tensor's own device unless one is given, as torch's new_*)
#define KINDLE_NEW_FACTORY(name, make)                                                                     \
  cls.def(name, [new_override](nb::handle_t<Tensor> t_obj, const DimList& s, std::optional<DType> dt,      \
                               std::optional<Device> dev) -> nb::object {                                  \
    if (torch_function_hint() && override_in({t_obj.ptr()})) [[unlikely]]                                \
      return new_override(name, t_obj, s, nullptr, dt);                                                    \
    const Tensor& self = *nb::inst_ptr<Tensor>(t_obj);                                                     \
    return nb::cast(make(s.dims, dt.value_or(self.dtype()), dev.value_or(self.device()), false));          \
  }, nb::arg("size"), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  KINDLE_NEW_FACTORY("new_zeros", zeros)
  KINDLE_NEW_FACTORY("new_ones", ones)
  KINDLE_NEW_FACTORY("new_empty", empty)
#undef KINDLE_NEW_FACTORY
  cls.def("new_full", [new_override](nb::handle_t<Tensor> t_obj, const DimList& s, const Scalar& v,
                                     std::optional<DType> dt, std::optional<Device> dev) -> nb::object {
    if (torch_function_hint() && override_in({t_obj.ptr()})) [[unlikely]]
      return new_override("new_full", t_obj, s, &v, dt);
    const Tensor& self = *nb::inst_ptr<Tensor>(t_obj);
    return nb::cast(full(s.dims, v, dt.value_or(self.dtype()), dev.value_or(self.device()), false));
  }, nb::arg("size"), nb::arg("fill_value"), nb::arg("dtype").none() = nb::none(), nb::arg("device").none() = nb::none());
  cls.def("__repr__", [](const Tensor& t) { return t.to_string(); });
  cls.def("__len__", [](const Tensor& t) {
    KINDLE_CHECK_TYPE(t.dim() > 0, "len() of a 0-d tensor");
    return t.sizes()[0];
  });
  cls.def("__iter__", [](const Tensor& t) {
    KINDLE_CHECK_TYPE(t.dim() > 0, "iteration over a 0-d tensor");
    return nb::iter(nb::cast(t.unbind(0)));
  });
  cls.def("__bool__", [](const Tensor& t) {
    KINDLE_CHECK(t.numel() == 1, "Boolean value of Tensor with more than one value is ambiguous");
    return t.item().to_bool();
  });
  // float(t) / int(t): one element (ValueError otherwise, as torch); a complex value with an
  // imaginary part does not convert (RuntimeError, as torch's overflow check)
  auto scalar_of = [](const Tensor& t, const char* to) {
    KINDLE_CHECK_VALUE(t.numel() == 1, "only one element tensors can be converted to Python scalars");
    Scalar v = t.item();
    KINDLE_CHECK(!t.is_complex() || v.to_complex().imag() == 0, "value cannot be converted to type ", to,
                 " without overflow");
    return v;
  };
  cls.def("__float__", [scalar_of](const Tensor& t) { return scalar_of(t, "double").to_double(); });
  cls.def("__int__", [scalar_of](const Tensor& t) { return scalar_of(t, "int64_t").to_int(); });
  cls.def("__index__", [](const Tensor& t) {
    KINDLE_CHECK_TYPE(t.numel() == 1 && is_integral(t.dtype(), true), "only integer tensors of a single element can be converted to an index");
    return t.item().to_int();
  });
  cls.def("__hash__", [](nb::handle h) { return std::hash<PyObject*>()(h.ptr()); });
  cls.def("__pos__", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "__pos__", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    KINDLE_CHECK(t.dtype() != kBool, "The `+` operator, on a bool tensor is not supported.");
    return nb::cast(t.view(t.sizes()));
  });
  cls.def("__neg__", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "neg", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return nb::cast(profiler::call("aten::neg", [&] { return neg(t); }, t));
  });
  cls.def("__abs__", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "abs", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    return nb::cast(profiler::call("aten::abs", [&] { return abs(t); }, t));
  });
  cls.def("__invert__", [](nb::handle_t<Tensor> t_obj) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "__invert__", t_obj.ptr());
    const Tensor& t = *nb::inst_ptr<Tensor>(t_obj);
    KINDLE_CHECK_TYPE(!t.is_floating_point(), "~ (operator.invert) is only implemented on integer and Boolean-type tensors");
    return nb::cast(t.dtype() == kBool ? logical_not(t) : bitwise_not(t));
  });

// (each is a profiler event under PyTorch's name for it)
// (each hands a call with an overriding operand to __torch_function__, python/torch_function.h)
#define KINDLE_BINOP(py, expr, aten, tf, rtf)                                                            \
  cls.def("__" py "__", [](nb::handle_t<Tensor> a_obj, const TensorArg& b_) -> nb::object {                   \
    KINDLE_TORCH_FUNCTION('t', tf, a_obj.ptr(), b_.src);                                                       \
    const Tensor& a = *nb::inst_ptr<Tensor>(a_obj);                                                            \
    const Tensor& b = b_.get();                                                                                \
    return nb::cast(profiler::call("aten::" aten, [&] { return expr(a, b); }, a, b)); }, nb::is_operator());  \
  cls.def("__r" py "__", [](nb::handle_t<Tensor> a_obj, const TensorArg& b_) -> nb::object {                  \
    KINDLE_TORCH_FUNCTION('t', rtf, a_obj.ptr(), b_.src);                                                      \
    const Tensor& a = *nb::inst_ptr<Tensor>(a_obj);                                                            \
    const Tensor& b = b_.get();                                                                                \
    return nb::cast(profiler::call("aten::" aten, [&] { return expr(b, a); }, b, a)); }, nb::is_operator());
  KINDLE_BINOP("mul", mul, "mul", "mul", "mul")
  KINDLE_BINOP("mod", remainder, "remainder", "__mod__", "__rmod__")
  KINDLE_BINOP("pow", pow, "pow", "pow", "__rpow__")
  // matmul is on the autocast lists (kindle/autocast.h); the bindings of the other operators are not
  auto autocast_matmul = [](const Tensor& x, const Tensor& y) {
    return profiler::call("aten::matmul", [&] {
      return autocast::call(autocast::Policy::Lower, [](const Tensor& p, const Tensor& q) { return matmul(p, q); }, x, y);
    }, x, y);
  };
  cls.def("__matmul__", [autocast_matmul](nb::handle_t<Tensor> a_obj, const TensorArg& b) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "matmul", a_obj.ptr(), b.src);
    const Tensor& a = *nb::inst_ptr<Tensor>(a_obj);
    return nb::cast(autocast_matmul(a, b.get()));
  }, nb::is_operator());
  cls.def("__rmatmul__", [autocast_matmul](nb::handle_t<Tensor> a_obj, const TensorArg& b) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "__rmatmul__", a_obj.ptr(), b.src);
    const Tensor& a = *nb::inst_ptr<Tensor>(a_obj);
    return nb::cast(autocast_matmul(b.get(), a));
  }, nb::is_operator());
  KINDLE_BINOP("lshift", bitwise_left_shift, "bitwise_left_shift", "__lshift__", "__rlshift__")
  KINDLE_BINOP("rshift", bitwise_right_shift, "bitwise_right_shift", "__rshift__", "__rrshift__")
  KINDLE_BINOP("add", add2, "add", "add", "add")
  KINDLE_BINOP("sub", sub2, "sub", "sub", "__rsub__")
  KINDLE_BINOP("truediv", div2, "div", "div", "__rtruediv__")
  KINDLE_BINOP("floordiv", floor_divide, "floor_divide", "__floordiv__", "__rfloordiv__")
  KINDLE_BINOP("and", bitwise_and, "bitwise_and", "__and__", "__rand__")
  KINDLE_BINOP("or", bitwise_or, "bitwise_or", "__or__", "__ror__")
  KINDLE_BINOP("xor", bitwise_xor, "bitwise_xor", "__xor__", "__rxor__")
#undef KINDLE_BINOP
  // In-place operators write into the tensor itself; the *_ ops check the result dtype.
#define KINDLE_IOP(py, op, aten)                                                                  \
  cls.def("__i" py "__", [](nb::handle_t<Tensor> h, const TensorArg& b_) -> nb::object {         \
    KINDLE_TORCH_FUNCTION('t', aten, h.ptr(), b_.src);                                 \
    const Tensor& a = *nb::inst_ptr<Tensor>(h);                                                   \
    const Tensor& b = b_.get();                                                                   \
    profiler::call("aten::" aten, [&]() -> const Tensor& { return op(a, b); }, a, b);             \
    return nb::borrow(h); });
  KINDLE_IOP("add", add_, "add_")
  KINDLE_IOP("sub", sub_, "sub_")
  KINDLE_IOP("mul", mul_, "mul_")
  KINDLE_IOP("truediv", div_, "div_")
  KINDLE_IOP("mod", remainder_, "remainder_")
  KINDLE_IOP("pow", pow_, "pow_")
  KINDLE_IOP("floordiv", floor_divide_, "floor_divide_")
  KINDLE_IOP("and", bitwise_and_, "bitwise_and_")
  KINDLE_IOP("or", bitwise_or_, "bitwise_or_")
  KINDLE_IOP("xor", bitwise_xor_, "bitwise_xor_")
  KINDLE_IOP("lshift", bitwise_left_shift_, "bitwise_left_shift_")
  KINDLE_IOP("rshift", bitwise_right_shift_, "bitwise_right_shift_")
#undef KINDLE_IOP
#define KINDLE_CMP(op, tf)                                                                           \
  cls.def("__" #op "__", [](nb::handle_t<Tensor> a_obj, const TensorArg& b_) -> nb::object {         \
    KINDLE_TORCH_FUNCTION('t', tf, a_obj.ptr(), b_.src);                                             \
    const Tensor& a = *nb::inst_ptr<Tensor>(a_obj);                                                  \
    const Tensor& b = b_.get();                                                                      \
    return nb::cast(profiler::call("aten::" #op, [&] { return op(a, b); }, a, b)); }, nb::is_operator());
  KINDLE_CMP(eq, "__eq__")
  KINDLE_CMP(ne, "__ne__")
  KINDLE_CMP(lt, "lt")
  KINDLE_CMP(le, "le")
  KINDLE_CMP(gt, "gt")
  KINDLE_CMP(ge, "ge")
#undef KINDLE_CMP
  m.def("is_tensor", [](nb::handle h) { return nb::isinstance<Tensor>(h); }, nb::arg("obj"));
}

// kindle.Tensor(...) called by a user: PyTorch's legacy constructor forms (Tensor(2, 3),
// Tensor(3), Tensor([1, 2]), Tensor(size), Tensor()), resolved in Python by kindle._legacy.
// (Numbers and arrays reach the ops through TensorArg, bind_common.h, not through this type's
// constructor, so Tensor(3) is the legacy size-3 tensor, as in PyTorch.)
void bind_tensor_constructor(nb::class_<Tensor>& cls) {
  cls.def("__init__", [](Tensor* t, nb::args args, nb::kwargs kwargs) {
    nb::object made = nb::module_::import_("kindle._legacy").attr("tensor_new")(*args, **kwargs);
    new (t) Tensor(nb::cast<Tensor>(made));
  });
}

}  // namespace kindle::python
