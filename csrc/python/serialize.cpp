// kindle._C._serialize: the checkpoint file machinery of csrc/serialize/ for kindle.save/load, so
// Python and C++ write and validate safetensors files and torch.save archives (zip layout and
// restricted unpickling) and replace files atomically by one implementation. Python keeps its
// object tree, file objects, map_location, and what only Python can do: pickling whole objects,
// trusted (weights_only=False) unpickling, and running the classes add_safe_globals allows.
#include <unordered_map>

#include "python/bind_common.h"
#include "serialize/atomic_file.h"
#include "serialize/safetensors.h"
#include "serialize/torch_pickle.h"

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

// A file descriptor (read with pread from `base`) or read_at(offset, memoryview) -> bool, for file
// objects (which add their own base).
safetensors::Source make_source(nb::handle source, uint64_t base, uint64_t size, const std::string& name) {
  if (PyLong_Check(source.ptr())) return safetensors::fd_source(nb::cast<int>(source), base, size, name);
  nb::callable read_at = nb::borrow<nb::callable>(source);
  safetensors::Source src;
  src.size = size;
  src.name = name;
  src.read_at = [read_at](uint64_t off, void* dst, size_t n) {
    ScopedView v(dst, n, true);
    return nb::cast<bool>(read_at(off, v.view));
  };
  return src;
}

// A checkpoint's Value as Python objects. Containers and tensors reached twice are one object, as
// pickle's memo keeps them; dict keys and set items the hash cannot be trusted on (anything but
// str, bytes, bool, None and ints below 2**60) go through check_key (Python's hash guard) first;
// Value::Object goes to make_object(type, by_new, args, kwargs, built, state).
class ToPython {
 public:
  ToPython(nb::callable make_object, nb::callable check_key)
      : make_object_(std::move(make_object)), check_key_(std::move(check_key)) {}

  nb::object operator()(const Value& v) {
    switch (v.kind()) {
      case Value::Kind::None: return nb::none();
      case Value::Kind::Bool: return nb::bool_(v.to_bool());
      case Value::Kind::Int: return nb::int_(v.to_int());
      case Value::Kind::Double: return nb::float_(v.to_double());
      case Value::Kind::String: {
        const std::string& s = v.to_string();
        PyObject* o = PyUnicode_DecodeUTF8(s.data(), Py_ssize_t(s.size()), "surrogatepass");
        if (!o) throw nb::python_error();
        return nb::steal(o);
      }
      case Value::Kind::Bytes: return nb::bytes(v.to_bytes().data(), v.to_bytes().size());
      case Value::Kind::DType: return nb::cast(v.to_dtype());
      case Value::Kind::Tensor: return memoized(v.to_tensor().impl(), [&] { return nb::cast(v.to_tensor()); });
      default: break;
    }
    const void* id = v.kind() == Value::Kind::Dict     ? static_cast<const void*>(&v.entries())
                     : v.kind() == Value::Kind::Object ? static_cast<const void*>(&v.object())
                                                       : static_cast<const void*>(&v.items());
    return memoized(id, [&] { return container(v); });
  }

 private:
  template <class F>
  nb::object memoized(const void* id, F make) {
    if (auto it = memo_.find(id); it != memo_.end()) return it->second;
    nb::object o = make();
    memo_.emplace(id, o);
    return o;
  }
  nb::object key(const Value& k) {
    nb::object o = (*this)(k);
    const bool trusted = k.is_string() || k.kind() == Value::Kind::Bytes || k.kind() == Value::Kind::Bool ||
                         k.is_none() || (k.is_int() && k.to_int() < (int64_t(1) << 60) && k.to_int() >= -(int64_t(1) << 60));
    if (!trusted) check_key_(o);
    return o;
  }
  nb::object container(const Value& v) {
    switch (v.kind()) {
      case Value::Kind::List: {
        nb::list l;
        for (const Value& x : v.items()) l.append((*this)(x));
        return l;
      }
      case Value::Kind::Tuple: {
        nb::list l;
        for (const Value& x : v.items()) l.append((*this)(x));
        return nb::tuple(l);
      }
      case Value::Kind::Set: {
        nb::object s = nb::steal(PySet_New(nullptr));
        for (const Value& x : v.items())
          if (PySet_Add(s.ptr(), key(x).ptr()) != 0) throw nb::python_error();
        return s;
      }
      case Value::Kind::Dict: {
        nb::object d = v.is_ordered_dict() ? nb::module_::import_("collections").attr("OrderedDict")() : nb::dict();
        for (const auto& [k, x] : v.entries()) {
          nb::object kk = key(k);
          if (PyObject_SetItem(d.ptr(), kk.ptr(), (*this)(x).ptr()) != 0) throw nb::python_error();
        }
        if (!v.dict_metadata().is_none()) nb::setattr(d, "_metadata", (*this)(v.dict_metadata()));
        return d;
      }
      default: {
        const Value::Object& o = v.object();
        nb::list args;
        for (const Value& x : o.args) args.append((*this)(x));
        return make_object_(o.type, o.by_new, nb::tuple(args), (*this)(o.kwargs), o.built, (*this)(o.state));
      }
    }
  }

  nb::callable make_object_, check_key_;
  std::unordered_map<const void*, nb::object> memo_;
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
    safetensors::Contents c = safetensors::read(make_source(source, base, size, name), max_header);
    nb::object metadata = nb::none();
    if (c.metadata) {
      nb::dict d;
      for (auto& [k, v] : *c.metadata) d[nb::str(k.data(), k.size())] = nb::str(v.data(), v.size());
      metadata = d;
    }
    return nb::make_tuple(nb::cast(std::move(c.tensors)), metadata);
  }, nb::arg("source"), nb::arg("base"), nb::arg("size"), nb::arg("name"),
     nb::arg("max_header") = safetensors::kMaxHeader);

  using torch_pickle::Archive;
  nb::class_<Archive>(s, "TorchArchive")
      .def("__init__", [](Archive* a, nb::handle source, uint64_t base, uint64_t size, const std::string& name) {
        new (a) Archive(make_source(source, base, size, name));
      }, nb::arg("source"), nb::arg("base"), nb::arg("size"), nb::arg("name"))
      .def_prop_ro("script", &Archive::script)
      .def("pickle", [](const Archive& a) { return nb::bytes(a.pickle().data(), a.pickle().size()); })
      .def("storage", &Archive::storage, nb::arg("key"), nb::arg("dtype"), nb::arg("numel"))
      // The restricted unpickler (weights_only=True): map_storage(tensor, location) -> tensor once
      // per storage; allowed(global) -> bool and refused(global, hint) for add_safe_globals and
      // torch's error; make_object and check_key as ToPython above.
      .def("load", [](Archive& a, nb::callable map_storage, const std::string& encoding, nb::callable allowed,
                      nb::callable refused, nb::callable make_object, nb::callable check_key, uint64_t memory_factor,
                      uint64_t memory_slack) {
        torch_pickle::ReadOptions opt;
        opt.python = true;
        opt.encoding = encoding;
        opt.memory_factor = memory_factor;
        opt.memory_slack = memory_slack;
        opt.allowed = [&](const std::string& g) { return nb::cast<bool>(allowed(g)); };
        opt.refused = [&](const std::string& g, const std::string& hint) { refused(g, hint); };
        std::unordered_map<std::string, Tensor> mapped;
        auto storage = [&](const std::string& key, DType dtype, int64_t numel, const std::string& location) {
          if (auto it = mapped.find(key); it != mapped.end()) {
            a.storage(key, dtype, numel);  // (checks that the second use agrees with the first)
            return it->second;
          }
          Tensor t = nb::cast<Tensor>(map_storage(a.storage(key, dtype, numel), location));
          mapped.emplace(key, t);
          return t;
        };
        Value v = torch_pickle::unpickle(a.pickle(), a.name(), a.size(), storage, opt);
        return ToPython(std::move(make_object), std::move(check_key))(v);
      });
  // The archive around a pickle Python made: sink(memoryview) for each piece, in order.
  s.def("write_torch_archive", [](nb::bytes data_pkl, const std::vector<Tensor>& storages, nb::callable sink) {
    torch_pickle::write_archive(std::string(data_pkl.c_str(), data_pkl.size()), storages,
                                [&](const void* data, size_t n) {
                                  ScopedView v(data, n, false);
                                  sink(v.view);
                                });
  }, nb::arg("data_pkl"), nb::arg("storages"), nb::arg("sink"));

  s.def("atomic_write", [](const std::string& path, nb::callable write) {
    files::atomic_write(path, [&](int fd) { write(fd); });
  }, nb::arg("path"), nb::arg("write"));
  s.def("temp_name", &files::temp_name, nb::arg("base"), nb::arg("pid"));
}

}  // namespace kindle::python
