// Python indexing: t[idx] and t[idx] = v with ints, slices, None, Ellipsis, bools, bool masks,
// integer tensors and lists, exactly like PyTorch. Basic indices make views; tensor indices go
// through kindle::index / index_put_.
#include "python/bind_common.h"
#include "python/torch_function.h"

#include "kindle/indexing.h"

namespace kindle::python {
namespace {

Tensor list_to_index(nb::handle h) {
  nb::object mod = nb::module_::import_("kindle");
  Tensor t = nb::cast<Tensor>(mod.attr("tensor")(h));
  return t.numel() == 0 && t.is_floating_point() ? t.to(kInt64) : t;  // x[[]]: an empty index, not a float one
}

// The Python index (an item or a tuple of items) as the list kindle::indexing takes.
// A list index holding a tensor, a sequence, a slice, an ellipsis or None (x[[rows, cols]]) is
// read as the tuple of its items, as torch 2.13 still does (with its deprecation warning); a list
// of plain integers is an index tensor.
bool list_as_tuple(PyObject* o) {
  if (!PyList_Check(o) || PyList_GET_SIZE(o) >= 32) return false;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(o); ++i) {
    PyObject* it = PyList_GET_ITEM(o, i);
    if (it == Py_None || it == Py_Ellipsis || PySlice_Check(it) || nb::isinstance<Tensor>(nb::handle(it)) ||
        (PySequence_Check(it) && !PyUnicode_Check(it) && !PyBytes_Check(it)))
      return true;
  }
  return false;
}

std::vector<indexing::TensorIndex> to_indices(nb::handle idx) {
  std::vector<nb::handle> items;
  if (PyTuple_Check(idx.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(idx)) items.push_back(h);
  } else if (list_as_tuple(idx.ptr())) {
    if (PyErr_WarnEx(PyExc_UserWarning, "Using a non-tuple sequence for multidimensional indexing is deprecated "
                     "and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this "
                     "will be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an "
                     "error or a different result", 1) < 0)
      throw nb::python_error();
    for (nb::handle h : nb::borrow<nb::list>(idx)) items.push_back(h);
  } else {
    items.push_back(idx);
  }
  std::vector<indexing::TensorIndex> out;
  out.reserve(items.size());
  for (nb::handle h : items) {
    PyObject* o = h.ptr();
    if (o == Py_None) {
      out.emplace_back(indexing::None);
    } else if (o == Py_Ellipsis) {
      out.emplace_back(indexing::Ellipsis);
    } else if (PyBool_Check(o)) {
      out.emplace_back(o == Py_True);
    } else if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
      out.emplace_back(indexing::Slice(int64_t(start), int64_t(std::min<Py_ssize_t>(stop, INT64_MAX)), int64_t(step)));
    } else if (nb::isinstance<Tensor>(h)) {
      out.emplace_back(nb::cast<Tensor>(h));
    } else if (int64_t v; PyLong_Check(o) && int_from_py(o, v)) {
      out.emplace_back(v);
    } else if (PyList_Check(o) || PySequence_Check(o)) {
      out.emplace_back(list_to_index(h));
    } else if (int_from_py(o, v)) {
      out.emplace_back(v);
    } else {
      throw IndexError(detail::str_cat("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                       "Variables are valid indices (got ", nb::inst_name(h).c_str(), ")"));
    }
  }
  return out;
}

Tensor getitem(const Tensor& self, nb::handle idx) {
  PyObject* o = idx.ptr();
  if (PyLong_Check(o) && !PyBool_Check(o)) {  // the common case, kept short
    int overflow = 0;
    int64_t k = PyLong_AsLongLongAndOverflow(o, &overflow);
    KINDLE_CHECK_INDEX(!overflow, "index ", nb::str(idx).c_str(), " is out of bounds: it does not fit in int64");
    KINDLE_CHECK_INDEX(self.dim() > 0, "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number");
    int64_t n = self.sizes()[0];
    KINDLE_CHECK_INDEX(k >= -n && k < n, "index ", k, " is out of bounds for dimension 0 with size ", n);
    return self.select(0, k);
  }
  return indexing::get(self, to_indices(idx));
}

void setitem(const Tensor& self, nb::handle idx, nb::handle value) {
  Tensor v;
  bool is_tensor = nb::isinstance<Tensor>(value);
  if (is_tensor) v = nb::cast<Tensor>(value);
  else {
    Scalar s;
    if (PyLong_Check(value.ptr()) && !nb::try_cast<Scalar>(value, s))
      throw ValueError("setitem: Overflow when unpacking long long (the value does not fit 64 bits)");
    if (!nb::try_cast<Scalar>(value, s)) {  // lists, tuples and arrays too, as in PyTorch
      throw TypeError(detail::str_cat("can't assign a ", Py_TYPE(value.ptr())->tp_name, " to a kindle tensor of dtype ",
                                      self.dtype()));
    } else {
      // PyTorch checks the range except for float16/bfloat16, which round to infinity.
      if (self.dtype() != kFloat16 && self.dtype() != kBFloat16) check_scalar_fits(s, self.dtype(), "setitem");
      // a complex value whose imaginary part a real tensor would drop (torch refuses it as an overflow)
      KINDLE_CHECK(!s.is_complex() || is_complex(self.dtype()) || s.to_complex().imag() == 0,
                   "value cannot be converted to type ", self.dtype(), " without overflow");
      v = scalar_tensor_of(s, self.dtype());
    }
  }
  indexing::set_(self, to_indices(idx), v, is_tensor);
}

}  // namespace

void bind_indexing(nb::class_<Tensor>& cls) {
  cls.def("__getitem__", [](nb::handle_t<Tensor> self, nb::handle idx) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "__getitem__", self.ptr(), idx.ptr());
    return nb::cast(getitem(*nb::inst_ptr<Tensor>(self), idx));
  }, nb::arg("idx").none());
  cls.def("__setitem__", [](nb::handle_t<Tensor> self, nb::handle idx, nb::handle value) -> nb::object {
    KINDLE_TORCH_FUNCTION('t', "__setitem__", self.ptr(), idx.ptr(), value.ptr());
    setitem(*nb::inst_ptr<Tensor>(self), idx, value);
    return nb::none();
  }, nb::arg("idx").none(), nb::arg("value").none());
}

}  // namespace kindle::python
