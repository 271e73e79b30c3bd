// kindle._C._distributed: stores, process groups, Work and the DDP reducer (kindle/distributed.h)
// behind python/kindle/distributed. Every call that can block releases the GIL.
#include <nanobind/stl/chrono.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include "kindle/distributed.h"
#include "python/bind_common.h"

namespace kindle::python {
namespace {

using namespace kindle::distributed;
using Release = nb::call_guard<nb::gil_scoped_release>;

PyObject* g_dist_error = nullptr;
PyObject* g_backend_error = nullptr;
PyObject* g_store_error = nullptr;

std::string as_bytes(nb::handle v) {
  if (nb::isinstance<nb::bytes>(v)) {
    nb::bytes b = nb::borrow<nb::bytes>(v);
    return std::string(b.c_str(), b.size());
  }
  if (nb::isinstance<nb::str>(v)) return nb::cast<std::string>(v);
  throw TypeError("Store.set: value must be str or bytes, got " + nb::cast<std::string>(nb::str(v.type())));
}

nb::bytes to_bytes(const std::string& s) { return nb::bytes(s.data(), s.size()); }

std::optional<Duration> ms(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return Duration(int64_t(*seconds * 1000.0));
}

}  // namespace

void bind_distributed(nb::module_& m) {
  nb::module_ d = m.def_submodule("_distributed", "Stores, process groups and the DDP reducer");
  g_dist_error = PyErr_NewException("kindle.distributed.DistError", PyExc_RuntimeError, nullptr);
  g_backend_error = PyErr_NewException("kindle.distributed.DistBackendError", g_dist_error, nullptr);
  g_store_error = PyErr_NewException("kindle.distributed.DistStoreError", g_dist_error, nullptr);
  d.attr("DistError") = nb::handle(g_dist_error);
  d.attr("DistBackendError") = nb::handle(g_backend_error);
  d.attr("DistStoreError") = nb::handle(g_store_error);
  // Registered after the core translator, so tried before it.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const DistError& e) {
      std::string msg = e.what();
      bool store = msg.rfind("TCPStore", 0) == 0 || msg.rfind("FileStore", 0) == 0 ||
                   msg.rfind("Timeout waiting for keys", 0) == 0;
      PyErr_SetString(store ? g_store_error : g_backend_error, e.what());
    }
  });
  d.def("gloo_available", &gloo_available);

  nb::class_<Store>(d, "Store")
      .def("set", [](Store& s, const std::string& key, nb::handle value) {
        std::string v = as_bytes(value);
        nb::gil_scoped_release r;
        s.set(key, v);
      }, nb::arg("key"), nb::arg("value"))
      .def("get", [](Store& s, const std::string& key) {
        std::string v;
        {
          nb::gil_scoped_release r;
          v = s.get(key);
        }
        return to_bytes(v);
      }, nb::arg("key"))
      .def("add", &Store::add, nb::arg("key"), nb::arg("value"), Release())
      .def("compare_set", [](Store& s, const std::string& key, nb::handle expected, nb::handle desired) {
        std::string e = as_bytes(expected), v = as_bytes(desired), out;
        {
          nb::gil_scoped_release r;
          out = s.compare_set(key, e, v);
        }
        return to_bytes(out);
      }, nb::arg("key"), nb::arg("expected_value"), nb::arg("desired_value"))
      .def("check", &Store::check, nb::arg("keys"), Release())
      .def("wait", [](Store& s, const std::vector<std::string>& keys, std::optional<double> timeout) {
        s.wait(keys, ms(timeout));
      }, nb::arg("keys"), nb::arg("timeout").none() = nb::none(), Release())
      .def("delete_key", &Store::delete_key, nb::arg("key"), Release())
      .def("num_keys", &Store::num_keys, Release())
      .def("set_timeout", [](Store& s, double seconds) { s.set_timeout(Duration(int64_t(seconds * 1000))); },
           nb::arg("timeout"))
      .def_prop_ro("_timeout_seconds", [](Store& s) { return double(s.timeout().count()) / 1000.0; })
      .def("_register_rank", &Store::register_rank, Release())
      .def("_departed_ranks", &Store::departed_ranks, Release());

  nb::class_<TCPStore, Store>(d, "TCPStore")
      .def("__init__", [](TCPStore* self, const std::string& host, int port, std::optional<int> world_size,
                          bool is_master, double timeout, bool wait_for_workers) {
        nb::gil_scoped_release r;
        new (self) TCPStore(host, port, world_size, is_master, Duration(int64_t(timeout * 1000)), wait_for_workers);
      }, nb::arg("host_name"), nb::arg("port"), nb::arg("world_size").none() = nb::none(), nb::arg("is_master") = false,
         nb::arg("timeout") = 300.0, nb::arg("wait_for_workers") = true)
      .def_prop_ro("port", &TCPStore::port)
      .def_prop_ro("host", &TCPStore::host);

  nb::class_<FileStore, Store>(d, "FileStore")
      .def("__init__", [](FileStore* self, const std::string& path, int world_size, double timeout) {
        nb::gil_scoped_release r;
        new (self) FileStore(path, world_size, Duration(int64_t(timeout * 1000)));
      }, nb::arg("file_name"), nb::arg("world_size") = -1, nb::arg("timeout") = 300.0);

  nb::class_<PrefixStore, Store>(d, "PrefixStore")
      .def(nb::init<std::string, std::shared_ptr<Store>>(), nb::arg("prefix"), nb::arg("store"))
      .def_prop_ro("underlying_store", &PrefixStore::underlying);

  nb::class_<Work>(d, "Work")
      .def("wait", [](Work& w, std::optional<double> timeout) { return w.wait(ms(timeout)); },
           nb::arg("timeout").none() = nb::none(), Release())
      .def("is_completed", &Work::is_completed)
      .def("is_success", &Work::is_success)
      .def("_source_rank", &Work::source)
      .def("exception", [](Work& w) -> nb::object {
        std::exception_ptr e = w.exception();
        if (!e) return nb::none();
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& x) {
          return nb::handle(g_backend_error)(x.what());
        }
      });

  nb::class_<ProcessGroup>(d, "ProcessGroup")
      .def("rank", &ProcessGroup::rank)
      .def("size", &ProcessGroup::size)
      .def("name", &ProcessGroup::backend_name)
      .def_prop_ro("group_name", [](ProcessGroup& g) { return g.options().group_name; })
      .def_prop_ro("store", &ProcessGroup::store)
      .def_prop_ro("timeout_seconds", [](ProcessGroup& g) { return double(g.options().timeout.count()) / 1000.0; })
      .def("all_reduce", [](ProcessGroup& g, Tensor t, int op) { return g.all_reduce(t, ReduceOp(op)); }, Release())
      .def("all_reduce_coalesced", [](ProcessGroup& g, std::vector<Tensor> ts, int op) {
        return g.all_reduce_coalesced(std::move(ts), ReduceOp(op));
      }, Release())
      .def("broadcast", &ProcessGroup::broadcast, Release())
      .def("reduce", [](ProcessGroup& g, Tensor t, int root, int op) { return g.reduce(t, root, ReduceOp(op)); },
           Release())
      .def("all_gather", &ProcessGroup::all_gather, Release())
      .def("all_gather_into_tensor", &ProcessGroup::all_gather_into_tensor, Release())
      .def("gather", &ProcessGroup::gather, Release())
      .def("scatter", &ProcessGroup::scatter, Release())
      .def("reduce_scatter", [](ProcessGroup& g, Tensor out, std::vector<Tensor> in, int op) {
        return g.reduce_scatter(out, std::move(in), ReduceOp(op));
      }, Release())
      .def("reduce_scatter_tensor", [](ProcessGroup& g, Tensor out, Tensor in, int op) {
        return g.reduce_scatter_tensor(out, in, ReduceOp(op));
      }, Release())
      .def("all_to_all", &ProcessGroup::all_to_all, Release())
      .def("all_to_all_single", &ProcessGroup::all_to_all_single, Release())
      .def("send", &ProcessGroup::send, Release())
      .def("recv", &ProcessGroup::recv, Release())
      .def("barrier", &ProcessGroup::barrier, Release())
      .def("monitored_barrier", [](ProcessGroup& g, std::optional<double> timeout, bool wait_all_ranks) {
        g.monitored_barrier(ms(timeout), wait_all_ranks);
      }, nb::arg("timeout").none() = nb::none(), nb::arg("wait_all_ranks") = false, Release())
      .def("shutdown", &ProcessGroup::shutdown, Release());

  d.def("new_gloo_group", [](std::shared_ptr<Store> store, int rank, int size, double timeout, bool debug,
                             std::string name, std::vector<int> global_ranks) {
    ProcessGroupOptions o;
    o.timeout = Duration(int64_t(timeout * 1000));
    o.debug_checks = debug;
    o.group_name = std::move(name);
    o.global_ranks = std::move(global_ranks);
    return new_gloo_group(std::move(store), rank, size, std::move(o));
  }, nb::arg("store"), nb::arg("rank"), nb::arg("size"), nb::arg("timeout"), nb::arg("debug"), nb::arg("group_name"),
     nb::arg("global_ranks"), Release());

  nb::class_<Reducer>(d, "Reducer")
      .def("__init__", [](Reducer* self, std::vector<Tensor> params, std::shared_ptr<ProcessGroup> group,
                          double bucket_cap_mb, bool find_unused, bool as_view) {
        ReducerOptions o;
        o.bucket_cap_mb = bucket_cap_mb;
        o.find_unused_parameters = find_unused;
        o.gradient_as_bucket_view = as_view;
        new (self) Reducer(std::move(params), std::move(group), o);
      }, nb::arg("params"), nb::arg("group"), nb::arg("bucket_cap_mb"), nb::arg("find_unused_parameters"),
         nb::arg("gradient_as_bucket_view"))
      .def("set_sync", &Reducer::set_sync)
      .def("sync", &Reducer::sync)
      .def("prepare_for_forward", &Reducer::prepare_for_forward)
      .def("bucket_indices", &Reducer::bucket_indices)
      .def("unused_parameters", &Reducer::unused_parameters)
      .def("last_wait_seconds", &Reducer::last_wait_seconds)
      .def("join_step", &Reducer::join_step)
      // hook(index, bucket_tensor) -> a callable returning the reduced tensor (called at the end of backward)
      .def("set_comm_hook", [](Reducer& r, nb::object hook) {
        r.set_comm_hook([hook](size_t index, const Tensor& bucket) -> std::function<Tensor()> {
          nb::gil_scoped_acquire gil;
          nb::object waiter = hook(index, bucket);
          // Released under the GIL whoever drops it last.
          std::shared_ptr<nb::object> keep(new nb::object(waiter), [](nb::object* o) {
            nb::gil_scoped_acquire g;
            delete o;
          });
          return [keep]() -> Tensor {
            nb::gil_scoped_acquire gil;
            Tensor t = nb::cast<Tensor>((*keep)());
            *keep = nb::object();
            return t;
          };
        });
      });

  d.def("broadcast_coalesced", &broadcast_coalesced, nb::arg("group"), nb::arg("tensors"), nb::arg("src") = 0,
        nb::arg("buffer_mb") = 250.0, Release());
}

}  // namespace kindle::python
