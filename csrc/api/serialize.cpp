// kindle::save / kindle::load: the C++ object model (kindle::Value) as the "kindle" metadata tree
// of a safetensors file; the file format itself (header, validation, atomic write) is the core's
// (csrc/serialize/), shared with Python's kindle.save.
#include "kindle/serialize.h"
#include "kindle/save_load.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <set>
#include <unordered_map>

#include "serialize/atomic_file.h"
#include "serialize/json.h"
#include "serialize/safetensors.h"
#include "serialize/torch_pickle.h"

namespace kindle {

namespace {

constexpr int kFormatVersion = 1;
constexpr int kMaxDepth = 100;  // nesting of containers, on save and on load

std::string where(const std::vector<std::string>& path) {
  if (path.empty()) return "the top level";
  std::string s;
  for (size_t i = 0; i < path.size(); ++i) s += (i ? "." : "") + path[i];
  return "'" + s + "'";
}

// ---------------------------------------------------------------------------------------------
// save: the tree of a Value and the tensors it names, then the core's safetensors plan.
// ---------------------------------------------------------------------------------------------

class Tree {
 public:
  explicit Tree(const Value& obj) {
    if (is_flat(obj)) {
      for (auto& [k, v] : obj.entries()) add(k.to_string(), v.to_tensor());
      return;
    }
    json::Node doc = json::object();
    std::vector<std::string> path;
    doc.object.emplace_back("version", json::integer(kFormatVersion));
    doc.object.emplace_back("tree", encode(obj, path, 0));
    std::string text;
    json::write(text, doc);
    metadata.emplace_back("kindle", std::move(text));
  }

  safetensors::Named tensors;
  safetensors::Metadata metadata{{"format", "pt"}};

 private:
  static bool is_flat(const Value& obj) {
    if (!obj.is_dict()) return false;
    for (auto& [k, v] : obj.entries())
      if (!k.is_string() || k.to_string() == "__metadata__" || !v.is_tensor() || v.to_tensor().requires_grad())
        return false;
    return true;
  }

  std::string add(std::string name, const Tensor& t) {
    std::string base = name;
    for (int n = 1; names_.count(name) || name == "__metadata__"; ++n) name = base + "#" + std::to_string(n);
    names_.insert(name);
    tensors.emplace_back(name, t);
    return name;
  }

  static json::Node tagged(const char* tag, json::Node value) {
    json::Node n = json::object();
    n.object.emplace_back(tag, std::move(value));
    return n;
  }

  json::Node encode(const Value& x, std::vector<std::string>& path, int depth) {
    KINDLE_CHECK_VALUE(depth <= kMaxDepth, "kindle.save: object nested deeper than ", kMaxDepth, " levels at ",
                       where(path));
    json::Node n;
    switch (x.kind()) {
      case Value::Kind::None: return n;
      case Value::Kind::Bool: n.type = json::Node::Type::Bool; n.b = x.to_bool(); return n;
      case Value::Kind::Int: return json::integer(x.to_int());
      case Value::Kind::Double: {
        double d = x.to_double();
        if (!std::isfinite(d))  // JSON has no NaN or infinities: Python's repr in a tagged node
          return tagged("float", json::str(std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
        n.type = json::Node::Type::Float;
        n.f = d;
        return n;
      }
      case Value::Kind::String: return json::str(x.to_string());
      case Value::Kind::Tensor: {
        std::string joined;
        for (size_t i = 0; i < path.size(); ++i) joined += (i ? "." : "") + path[i];
        const Tensor& t = x.to_tensor();
        n = tagged("tensor", json::str(add(joined.empty() ? "tensor" : joined, t)));
        if (t.requires_grad()) {
          json::Node b;
          b.type = json::Node::Type::Bool;
          b.b = true;
          n.object.emplace_back("requires_grad", b);
        }
        return n;
      }
      case Value::Kind::DType: return tagged("dtype", json::str(dtype_name(x.to_dtype())));
      case Value::Kind::Bytes:
      case Value::Kind::Object:
        throw ValueError("kindle.save: cannot save " +
                         (x.kind() == Value::Kind::Bytes ? std::string("bytes") : x.object().type) + " at " +
                         where(path) + " in a safetensors file; save it in torch's format");
      case Value::Kind::Dict: {
        json::Node items = json::array();
        for (auto& [k, v] : x.entries()) {
          KINDLE_CHECK_TYPE(k.is_string() || k.is_int(), "kindle.save: dict key ", k.repr(), " at ", where(path),
                            " has type ", value_kind_name(k.kind()), "; keys must be str or int");
          json::Node pair = json::array();
          pair.array.push_back(k.is_string() ? json::str(k.to_string()) : json::integer(k.to_int()));
          path.push_back(k.is_string() ? k.to_string() : std::to_string(k.to_int()));
          pair.array.push_back(encode(v, path, depth + 1));
          path.pop_back();
          items.array.push_back(std::move(pair));
        }
        return tagged("dict", std::move(items));
      }
      default: {
        json::Node items = json::array();
        const auto& xs = x.items();
        for (size_t i = 0; i < xs.size(); ++i) {
          path.push_back(std::to_string(i));
          items.array.push_back(encode(xs[i], path, depth + 1));
          path.pop_back();
        }
        return tagged(x.kind() == Value::Kind::List ? "list" : x.kind() == Value::Kind::Tuple ? "tuple" : "set",
                      std::move(items));
      }
    }
  }

  std::set<std::string> names_;
};

safetensors::Plan plan_of(const Value& obj) {
  Tree tree(obj);
  return safetensors::Plan(std::move(tree.tensors), tree.metadata);
}

// ---------------------------------------------------------------------------------------------
// load: the core reads and validates the file; the tree becomes a Value.
// ---------------------------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw ValueError("kindle.load: " + name + ": " + what);
}

Value decode(const std::string& name, const json::Node& node, const OrderedDict<Tensor>& tensors, int depth) {
  if (depth > kMaxDepth) fail(name, "'kindle' metadata is nested deeper than " + std::to_string(kMaxDepth) + " levels");
  switch (node.type) {
    case json::Node::Type::Null: return Value();
    case json::Node::Type::Bool: return Value(node.b);
    case json::Node::Type::Int: return Value(node.i);
    case json::Node::Type::BigInt: fail(name, "'kindle' metadata: integer " + node.s + " does not fit in 64 bits");
    case json::Node::Type::Float: return Value(node.f);
    case json::Node::Type::String: return Value(node.s);
    default: break;
  }
  if (node.type != json::Node::Type::Object || node.object.empty())
    fail(name, "'kindle' metadata: unexpected node " + json::py_repr(node, 100));
  const std::string& tag = node.object[0].first;
  const json::Node& value = node.object[0].second;
  if (tag == "tensor") {
    const Tensor* t = value.type == json::Node::Type::String ? tensors.find(value.s) : nullptr;
    if (!t)
      fail(name, "'kindle' metadata references tensor " + json::py_repr(value, 100) + ", which the file does not hold");
    const json::Node* rg = node.find("requires_grad");
    if (rg && rg->type == json::Node::Type::Bool && rg->b) {
      if (!t->is_floating_point())
        fail(name, "'kindle' metadata asks tensor '" + value.s + "' of " + dtype_name(t->dtype()) + " to require grad");
      t->requires_grad_(true);
    }
    return Value(*t);
  }
  if (tag == "float" && value.type == json::Node::Type::String &&
      (value.s == "nan" || value.s == "inf" || value.s == "-inf"))
    return Value(value.s == "nan" ? std::nan("") : value.s == "inf" ? HUGE_VAL : -HUGE_VAL);
  if (tag == "dtype" && value.type == json::Node::Type::String) {
    for (int d = 0; d < kNumDTypes; ++d)
      if (value.s == dtype_name(DType(d))) return Value(DType(d));
  }
  if ((tag == "list" || tag == "tuple" || tag == "set" || tag == "dict") && value.type == json::Node::Type::Array) {
    if (tag == "dict") {
      Value::Entries out;
      std::unordered_map<std::string, size_t> index;  // a repeated key: the last value, at the first position
      for (auto& pair : value.array) {
        if (pair.type != json::Node::Type::Array || pair.array.size() != 2 ||
            (pair.array[0].type != json::Node::Type::String && pair.array[0].type != json::Node::Type::Int))
          fail(name, "'kindle' metadata: dict item " + json::py_repr(pair, 100) + " is not a [str or int key, value] pair");
        const json::Node& k = pair.array[0];
        bool is_str = k.type == json::Node::Type::String;
        Value v = decode(name, pair.array[1], tensors, depth + 1);
        auto [it, fresh] = index.try_emplace(is_str ? "s" + k.s : "i" + std::to_string(k.i), out.size());
        if (fresh) out.emplace_back(is_str ? Value(k.s) : Value(k.i), std::move(v));
        else out[it->second].second = std::move(v);
      }
      return Value::dict(std::move(out));
    }
    Value::Items items;
    for (auto& v : value.array) items.push_back(decode(name, v, tensors, depth + 1));
    if (tag == "list") return Value::list(std::move(items));
    if (tag == "tuple") return Value::tuple(std::move(items));
    return Value::set(std::move(items));
  }
  fail(name, "'kindle' metadata: unexpected node " + json::py_repr(node, 100));
}

Value load_safetensors(const safetensors::Source& src) {
  const std::string& name = src.name;
  safetensors::Contents file = safetensors::read(src);
  const std::string* tree = nullptr;
  if (file.metadata)
    for (auto& [k, v] : *file.metadata)
      if (k == "kindle") tree = &v;
  if (!tree) {
    Value::Entries out;
    for (auto& [k, t] : file.tensors) out.emplace_back(Value(k), Value(t));
    return Value::dict(std::move(out));
  }
  OrderedDict<Tensor> tensors;
  for (auto& [k, t] : file.tensors) tensors.insert(k, t);
  json::Node doc;
  std::string err;
  if (!json::parse(*tree, doc, err, kMaxDepth * 4 + 8)) fail(name, "'kindle' metadata is not valid JSON (" + err + ")");
  const json::Node* root = doc.type == json::Node::Type::Object ? doc.find("tree") : nullptr;
  if (!root) fail(name, "'kindle' metadata must be an object with a 'tree'");
  const json::Node* version = doc.find("version");
  if (!version || version->type != json::Node::Type::Int || version->i != kFormatVersion)
    fail(name, "'kindle' metadata has version " + (version ? json::py_repr(*version) : std::string("None")) +
                   "; this Kindle reads version " + std::to_string(kFormatVersion));
  return decode(name, *root, tensors, 0);
}

detail::Checkpoint load_source(const safetensors::Source& src) {
  if (torch_pickle::is_zip(src)) {
    torch_pickle::Loaded l = torch_pickle::read_archive(src);
    return {std::move(l.value), l.script};
  }
  return {load_safetensors(src), false};
}

void write_file(const std::string& path, const std::function<void(const safetensors::Sink&)>& write) {
  files::atomic_write(path, [&](int fd) {
    write([&](const void* p, size_t n) {
      const char* c = static_cast<const char*>(p);
      while (n) {
        ssize_t k = ::write(fd, c, std::min<size_t>(n, size_t(1) << 30));
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) throw OSError(errno, std::string("kindle.save: writing: ") + std::strerror(errno), path);
        c += k;
        n -= size_t(k);
      }
    });
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// public API
// ---------------------------------------------------------------------------------------------

void save(const Value& obj, const std::string& path, CheckpointFormat format) {
  if (format == CheckpointFormat::torch) {
    write_file(path, [&](const safetensors::Sink& sink) { torch_pickle::write_archive(obj, sink); });
    return;
  }
  safetensors::Plan plan = plan_of(obj);  // before the file is opened: a failure leaves the disk untouched
  write_file(path, [&](const safetensors::Sink& sink) { plan.write(sink); });
}

void save(const StateDict& tensors, const std::string& path) {
  Value::Entries e;
  for (auto& [k, t] : tensors) {
    KINDLE_CHECK_VALUE(k != "__metadata__", "kindle.save: '__metadata__' is reserved by the safetensors format "
                                            "and cannot name a tensor");
    KINDLE_CHECK_VALUE(t.defined(), "kindle.save: tensor '", k, "' is undefined");
    e.emplace_back(Value(k), Value(t.detach()));  // flat: a state dict never records requires_grad
  }
  save(Value::dict(std::move(e)), path);
}

std::string save_to_bytes(const Value& obj, CheckpointFormat format) {
  std::string out;
  safetensors::Sink sink = [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); };
  if (format == CheckpointFormat::torch) torch_pickle::write_archive(obj, sink);
  else plan_of(obj).write(sink);
  return out;
}

Value load_from_bytes(const std::string& bytes, const std::string& name) {
  return detail::load_checkpoint_bytes(bytes, name).value;
}

Value load_value(const std::string& path) { return detail::load_checkpoint(path).value; }

namespace detail {

Checkpoint load_checkpoint_bytes(const std::string& bytes, const std::string& name) {
  return load_source(safetensors::bytes_source(bytes, name));
}

StateDict module_tensors(const Value& module) {
  StateDict out;
  std::function<void(const Value&, const std::string&)> walk = [&](const Value& v, const std::string& prefix) {
    for (const auto& [k, x] : v.entries()) {  // (the reader bounds the tree these dicts expand to)
      if (!k.is_string()) continue;
      if (x.is_tensor()) out.insert(prefix + k.to_string(), x.to_tensor());
      else if (x.is_dict()) walk(x, prefix + k.to_string() + ".");
    }
  };
  walk(module, "");
  return out;
}

Checkpoint load_checkpoint(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw OSError(errno, std::string("kindle.load: cannot open: ") + std::strerror(errno), path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) throw OSError(errno, std::string("kindle.load: stat: ") + std::strerror(errno), path);
  if (S_ISDIR(st.st_mode)) throw OSError(EISDIR, "kindle.load: is a directory", path);
  return load_source(safetensors::fd_source(fd, 0, uint64_t(st.st_size), path));
}

}  // namespace detail

StateDict load(const std::string& path) {
  detail::Checkpoint c = detail::load_checkpoint(path);
  if (c.torchscript && c.value.is_dict()) return detail::module_tensors(c.value);
  const Value& v = c.value;
  KINDLE_CHECK_TYPE(v.is_dict(), "kindle::load: ", path, " holds a ", value_kind_name(v.kind()),
                    ", not a dict of tensors; use kindle::load_value");
  return v.to_state_dict(("kindle::load: " + path).c_str());
}

// ---- torch::save / torch::load of tensors (include/kindle/save_load.h)

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  StateDict sd;
  for (size_t i = 0; i < tensors.size(); ++i) sd.insert(std::to_string(i), tensors[i]);
  save(sd, path);
}

void save(const Tensor& tensor, const std::string& path) { save(std::vector<Tensor>{tensor}, path); }

void load(std::vector<Tensor>& tensors, const std::string& path) {
  StateDict sd = load(path);
  std::vector<Tensor> out;
  for (size_t i = 0; i < sd.size(); ++i) {
    const Tensor* t = sd.find(std::to_string(i));
    KINDLE_CHECK_VALUE(t != nullptr, "kindle::load: ", path, " is not a list of tensors (no key '", i, "')");
    out.push_back(*t);
  }
  tensors = std::move(out);
}

void load(Tensor& tensor, const std::string& path) {
  std::vector<Tensor> v;
  load(v, path);
  KINDLE_CHECK_VALUE(v.size() == 1, "kindle::load: ", path, " holds ", v.size(), " tensors, expected one");
  tensor = v[0];
}

}  // namespace kindle
