// Python indexing: t[idx] and t[idx] = v with ints, slices, None, Ellipsis, bools, bool masks,
// integer tensors and lists, exactly like PyTorch. Basic indices make views; tensor indices go
// through kindle::index / index_put_.
#include "python/bind_common.h"
#include "python/torch_function.h"

namespace kindle::python {
namespace {

Tensor list_to_index(nb::handle h) {
  nb::object mod = nb::module_::import_("kindle");
  return nb::cast<Tensor>(mod.attr("tensor")(h));
}

struct Parsed {
  Tensor view;                                 // after the basic indices
  std::vector<std::optional<Tensor>> indices;  // one per dim of `view`; set where advanced
  bool advanced = false;
};

Parsed parse(const Tensor& self, nb::handle idx) {
  std::vector<nb::handle> items;
  nb::object keep;
  if (PyTuple_Check(idx.ptr())) {
    for (nb::handle h : nb::borrow<nb::tuple>(idx)) items.push_back(h);
  } else {
    items.push_back(idx);
  }
  // Dims each item consumes, to size the Ellipsis.
  std::vector<Tensor> tensors(items.size());
  int64_t consumed = 0;
  int ellipses = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    PyObject* o = items[i].ptr();
    if (o == Py_None) continue;
    if (o == Py_Ellipsis) { ++ellipses; continue; }
    if (PyBool_Check(o)) { tensors[i] = scalar_tensor_of(Scalar(o == Py_True), kBool); continue; }
    if (PyLong_Check(o) || PySlice_Check(o)) { ++consumed; continue; }
    if (nb::isinstance<Tensor>(items[i])) tensors[i] = nb::cast<Tensor>(items[i]);
    else if (PyList_Check(o) || PySequence_Check(o)) tensors[i] = list_to_index(items[i]);
    else {
      int64_t v;
      if (int_from_py(o, v)) { ++consumed; continue; }
      throw IndexError(detail::str_cat("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                                       "Variables are valid indices (got ", nb::inst_name(items[i]).c_str(), ")"));
    }
    const Tensor& t = tensors[i];
    consumed += (t.dtype() == kBool || t.dtype() == kUInt8) ? t.dim() : 1;
  }
  KINDLE_CHECK_INDEX(ellipses <= 1, "an index can only have a single ellipsis ('...')");
  KINDLE_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim());
  Parsed p;
  Tensor v = self;
  int64_t d = 0;
  std::vector<std::pair<int64_t, Tensor>> adv;  // (dim in v, index tensor)
  for (size_t i = 0; i < items.size(); ++i) {
    PyObject* o = items[i].ptr();
    if (o == Py_None) { v = v.unsqueeze(d); ++d; continue; }
    if (o == Py_Ellipsis) { d += self.dim() - consumed; continue; }
    if (tensors[i].defined()) {
      const Tensor& t = tensors[i];
      adv.emplace_back(d, t);
      d += (t.dtype() == kBool || t.dtype() == kUInt8) ? t.dim() : 1;
      continue;
    }
    if (PySlice_Check(o)) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(o, &start, &stop, &step) < 0) throw nb::python_error();
      KINDLE_CHECK_VALUE(step > 0, "step must be greater than zero");
      bool full = start == 0 && stop == PY_SSIZE_T_MAX && step == 1;
      if (!full) v = slice(v, d, int64_t(start), int64_t(std::min<Py_ssize_t>(stop, INT64_MAX)), int64_t(step));
      ++d;
      continue;
    }
    int64_t k;
    int_from_py(o, k);
    KINDLE_CHECK_INDEX(v.dim() > 0, "invalid index of a 0-dim tensor. Use `tensor.item()` to convert a 0-dim tensor to a number");
    int64_t n = v.sizes()[d];
    KINDLE_CHECK_INDEX(k >= -n && k < n, "index ", k, " is out of bounds for dimension ", d, " with size ", n);
    v = v.select(d, k);
  }
  p.view = v;
  if (!adv.empty()) {
    p.advanced = true;
    // One entry per index item: a mask covering k dims is one entry that consumes k dims.
    int64_t cur = 0;
    for (auto& [dim, t] : adv) {
      for (; cur < dim; ++cur) p.indices.emplace_back();
      p.indices.emplace_back(t);
      cur += (t.dtype() == kBool || t.dtype() == kUInt8) ? t.dim() : 1;
    }
    for (; cur < v.dim(); ++cur) p.indices.emplace_back();
  }
  return p;
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
  Parsed p = parse(self, idx);
  if (!p.advanced) return p.view.is_same(self) ? self.view(self.sizes()) : p.view;
  return index(p.view, p.indices);
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
      v = scalar_tensor_of(s, self.dtype());
    }
  }
  // PyTorch drops the value's leading size-1 dims, then broadcasts it to the indexed view.
  while (v.dim() > 0 && v.size(0) == 1) v = v.squeeze(IntArrayRef{0});
  Parsed p = parse(self, idx);
  if (!p.advanced) {
    p.view.copy_(v);
    return;
  }
  // PyTorch's order: an index into a size-0 dim, then the dtypes, then the index values.
  for (size_t d = 0; d < p.indices.size(); ++d)
    if (p.indices[d] && p.indices[d]->dtype() != kBool && p.indices[d]->dtype() != kUInt8 && p.indices[d]->numel() &&
        int64_t(d) < p.view.dim() && p.view.size(int64_t(d)) == 0)
      throw IndexError("index is out of bounds for dimension with size 0");
  KINDLE_CHECK(!is_tensor || v.dtype() == self.dtype(), "Index put requires the source and destination dtypes match, got ",
               self.dtype(), " for the destination and ", v.dtype(), " for the source.");
  index_put_(p.view, p.indices, v, false);
  self.bump_version();
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
