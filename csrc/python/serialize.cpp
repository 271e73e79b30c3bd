// kindle._C._serialize: the checkpoint file machinery of csrc/serialize/ for kindle.save/load, so
// Python and C++ write and validate safetensors files and replace files atomically by one
// implementation. Python keeps its object tree, file objects and map_location.
#include "python/bind_common.h"
#include "serialize/atomic_file.h"
#include "serialize/safetensors.h"

#include <nanobind/stl/function.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace kindle::python {

namespace {

// A memoryview of memory that is valid only during a call into Python: released right after, so a
// sink that kept it gets ValueError on use, not stale memory.
struct ScopedView {
  ScopedView(const void* p, size_t n, bool writable)
      : view(nb::steal(PyMemoryView_FromMemory(static_cast<char*>(const_cast<void*>(p)), Py_ssize_t(n),
                                               writable ? PyBUF_WRITE : PyBUF_READ))) {
    if (!view.is_valid()) throw nb::python_error();
  }
  ~ScopedView() {
    if (view.is_valid() && PyObject_CallMethod(view.ptr(), "release", nullptr) == nullptr) PyErr_Clear();
  }
  nb::object view;
};

safetensors::Metadata metadata_of(const nb::dict& d) {
  safetensors::Metadata m;
  for (auto [k, v] : d) m.emplace_back(nb::cast<std::string>(k), nb::cast<std::string>(v));
  return m;
}

}  // namespace

void bind_serialize(nb::module_& m) {
  nb::module_ s = m.def_submodule("_serialize", "checkpoint files: safetensors and atomic writes");
  nb::class_<safetensors::Plan>(s, "SafetensorsPlan")
      .def("__init__", [](safetensors::Plan* p, safetensors::Named tensors, const nb::dict& metadata) {
        new (p) safetensors::Plan(std::move(tensors), metadata_of(metadata));
      }, nb::arg("tensors"), nb::arg("metadata"))
      // sink(memoryview) for each piece of the file, in order; the view is valid during the call.
      .def("write", [](const safetensors::Plan& p, nb::callable sink) {
        p.write([&](const void* data, size_t n) {
          ScopedView v(data, n, false);
          sink(v.view);
        });
      }, nb::arg("sink"));

  // source: a file descriptor (read with pread) or read_at(offset, memoryview) -> bool, for file objects.
  s.def("read_safetensors", [](nb::handle source, uint64_t base, uint64_t size, const std::string& name,
                               uint64_t max_header) {
    safetensors::Source src;
    if (PyLong_Check(source.ptr())) {
      src = safetensors::fd_source(nb::cast<int>(source), base, size, name);
    } else {
      nb::callable read_at = nb::borrow<nb::callable>(source);
      src.size = size;
      src.name = name;
      src.read_at = [read_at](uint64_t off, void* dst, size_t n) {
        ScopedView v(dst, n, true);
        return nb::cast<bool>(read_at(off, v.view));
      };
    }
    safetensors::Contents c = safetensors::read(src, max_header);
    nb::object metadata = nb::none();
    if (c.metadata) {
      nb::dict d;
      for (auto& [k, v] : *c.metadata) d[nb::str(k.data(), k.size())] = nb::str(v.data(), v.size());
      metadata = d;
    }
    return nb::make_tuple(nb::cast(std::move(c.tensors)), metadata);
  }, nb::arg("source"), nb::arg("base"), nb::arg("size"), nb::arg("name"),
     nb::arg("max_header") = safetensors::kMaxHeader);

  s.def("atomic_write", [](const std::string& path, nb::callable write) {
    files::atomic_write(path, [&](int fd) { write(fd); });
  }, nb::arg("path"), nb::arg("write"));
  s.def("temp_name", &files::temp_name, nb::arg("base"), nb::arg("pid"));
}

}  // namespace kindle::python
