// kindle::save / kindle::load in the safetensors layout Python's kindle.save writes (see
// serialize.h and python/kindle/serialization.py, whose checks and messages this mirrors).
#include "kindle/serialize.h"
#include "kindle/save_load.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>

#include "json.h"
#include "kindle/autograd.h"
#include "kindle/ops.h"

namespace kindle {

namespace {

constexpr int kFormatVersion = 1;
constexpr int kMaxDepth = 100;                       // nesting of containers, on save and on load
constexpr uint64_t kMaxHeader = 100ull * 1024 * 1024;  // safetensors' own limit on the JSON header
constexpr size_t kMaxDims = 64;
constexpr int64_t kMaxNumel = INT64_MAX;

const char* st_name(DType d) {
  switch (d) {
    case kFloat64: return "F64";
    case kFloat32: return "F32";
    case kFloat16: return "F16";
    case kBFloat16: return "BF16";
    case kInt64: return "I64";
    case kInt32: return "I32";
    case kInt16: return "I16";
    case kInt8: return "I8";
    case kUInt8: return "U8";
    case kBool: return "BOOL";
    case kComplex64: return "C64";
    default: break;
  }
  return "?";
}

bool st_dtype(const std::string& s, DType& out) {
  static const std::pair<const char*, DType> table[] = {
      {"F64", kFloat64}, {"F32", kFloat32}, {"F16", kFloat16}, {"BF16", kBFloat16}, {"I64", kInt64},
      {"I32", kInt32},   {"I16", kInt16},   {"I8", kInt8},     {"U8", kUInt8},      {"BOOL", kBool},
      {"C64", kComplex64}};
  for (auto& [n, d] : table)
    if (s == n) {
      out = d;
      return true;
    }
  return false;
}

std::string where(const std::vector<std::string>& path) {
  if (path.empty()) return "the top level";
  std::string s;
  for (size_t i = 0; i < path.size(); ++i) s += (i ? "." : "") + path[i];
  return "'" + s + "'";
}

json::Node jstr(std::string s) {
  json::Node n;
  n.type = json::Node::Type::String;
  n.s = std::move(s);
  return n;
}
json::Node jint(int64_t i) {
  json::Node n;
  n.type = json::Node::Type::Int;
  n.i = i;
  return n;
}
json::Node jobj() {
  json::Node n;
  n.type = json::Node::Type::Object;
  return n;
}
json::Node jarr() {
  json::Node n;
  n.type = json::Node::Type::Array;
  return n;
}

// ---------------------------------------------------------------------------------------------
// save: the plan (tensors in file order and the header bytes) is built before any file is
// opened, so an object that cannot be saved leaves the disk untouched.
// ---------------------------------------------------------------------------------------------

class Plan {
 public:
  explicit Plan(const Value& obj) {
    bool flat = is_flat(obj);
    json::Node tree;
    if (flat) {
      for (auto& [k, v] : obj.entries()) add(k.to_string(), v.to_tensor());
    } else {
      std::vector<std::string> path;
      tree = encode(obj, path, 0);
    }
    build_header(flat, tree);
  }

  std::vector<std::pair<std::string, Tensor>> tensors;  // file order
  std::string header;

 private:
  static bool is_flat(const Value& obj) {
    if (!obj.is_dict()) return false;
    for (auto& [k, v] : obj.entries()) {
      if (!k.is_string() || k.to_string() == "__metadata__" || !v.is_tensor()) return false;
      if (v.to_tensor().requires_grad()) return false;
    }
    return true;
  }

  std::string add(std::string name, const Tensor& t) {
    KINDLE_CHECK_VALUE(t.defined(), "kindle.save: tensor '", name, "' is undefined");
    std::string base = name;
    for (int n = 1; names_.count(name) || name == "__metadata__"; ++n) name = base + "#" + std::to_string(n);
    names_.insert(name);
    tensors.emplace_back(name, t);
    return name;
  }

  json::Node encode(const Value& x, std::vector<std::string>& path, int depth) {
    KINDLE_CHECK_VALUE(depth <= kMaxDepth, "kindle.save: object nested deeper than ", kMaxDepth, " levels at ",
                       where(path));
    json::Node n;
    switch (x.kind()) {
      case Value::Kind::None: return n;
      case Value::Kind::Bool: n.type = json::Node::Type::Bool; n.b = x.to_bool(); return n;
      case Value::Kind::Int: return jint(x.to_int());
      case Value::Kind::Double: {
        double d = x.to_double();
        if (std::isfinite(d)) {
          n.type = json::Node::Type::Float;
          n.f = d;
          return n;
        }
        // JSON has no NaN or infinities: Python's repr in a tagged node.
        n = jobj();
        n.object.emplace_back("float", jstr(std::isnan(d) ? "nan" : d > 0 ? "inf" : "-inf"));
        return n;
      }
      case Value::Kind::String: return jstr(x.to_string());
      case Value::Kind::Tensor: {
        std::string joined;
        for (size_t i = 0; i < path.size(); ++i) joined += (i ? "." : "") + path[i];
        const Tensor& t = x.to_tensor();
        n = jobj();
        n.object.emplace_back("tensor", jstr(add(joined.empty() ? "tensor" : joined, t)));
        if (t.requires_grad()) {
          json::Node b;
          b.type = json::Node::Type::Bool;
          b.b = true;
          n.object.emplace_back("requires_grad", b);
        }
        return n;
      }
      case Value::Kind::DType:
        n = jobj();
        n.object.emplace_back("dtype", jstr(dtype_name(x.to_dtype())));
        return n;
      case Value::Kind::Dict: {
        json::Node items = jarr();
        for (auto& [k, v] : x.entries()) {
          KINDLE_CHECK_TYPE(k.is_string() || k.is_int(), "kindle.save: dict key ", k.repr(), " at ", where(path),
                            " has type ", value_kind_name(k.kind()), "; keys must be str or int");
          json::Node pair = jarr();
          pair.array.push_back(k.is_string() ? jstr(k.to_string()) : jint(k.to_int()));
          path.push_back(k.is_string() ? k.to_string() : std::to_string(k.to_int()));
          pair.array.push_back(encode(v, path, depth + 1));
          path.pop_back();
          items.array.push_back(std::move(pair));
        }
        n = jobj();
        n.object.emplace_back("dict", std::move(items));
        return n;
      }
      default: {
        json::Node items = jarr();
        const auto& xs = x.items();
        for (size_t i = 0; i < xs.size(); ++i) {
          path.push_back(std::to_string(i));
          items.array.push_back(encode(xs[i], path, depth + 1));
          path.pop_back();
        }
        n = jobj();
        const char* tag = x.kind() == Value::Kind::List ? "list" : x.kind() == Value::Kind::Tuple ? "tuple" : "set";
        n.object.emplace_back(tag, std::move(items));
        return n;
      }
    }
  }

  void build_header(bool flat, const json::Node& tree) {
    json::Node header = jobj();
    json::Node metadata = jobj();
    metadata.object.emplace_back("format", jstr("pt"));
    if (!flat) {
      json::Node doc = jobj();
      doc.object.emplace_back("version", jint(kFormatVersion));
      doc.object.emplace_back("tree", tree);
      std::string text;
      json::write(text, doc);
      metadata.object.emplace_back("kindle", jstr(text));
    }
    header.object.emplace_back("__metadata__", metadata);
    // Widest dtypes first (a stable sort, as Python's sorted): with the header padded to 8
    // bytes every tensor starts at a multiple of its element size.
    std::vector<size_t> order(tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return tensors[a].second.element_size() > tensors[b].second.element_size();
    });
    std::vector<std::pair<int64_t, int64_t>> offsets(tensors.size());
    int64_t pos = 0;
    for (size_t i : order) {
      int64_t n = int64_t(tensors[i].second.nbytes());
      offsets[i] = {pos, pos + n};
      pos += n;
    }
    for (size_t i = 0; i < tensors.size(); ++i) {
      const Tensor& t = tensors[i].second;
      KINDLE_CHECK_TYPE(std::string_view(st_name(t.dtype())) != "?", "kindle::save: tensor '", tensors[i].first,
                        "' has dtype ", t.dtype(), ", which safetensors cannot store");
      json::Node e = jobj();
      e.object.emplace_back("dtype", jstr(st_name(t.dtype())));
      json::Node shape = jarr();
      for (int64_t s : t.sizes()) shape.array.push_back(jint(s));
      e.object.emplace_back("shape", shape);
      json::Node off = jarr();
      off.array.push_back(jint(offsets[i].first));
      off.array.push_back(jint(offsets[i].second));
      e.object.emplace_back("data_offsets", off);
      header.object.emplace_back(tensors[i].first, std::move(e));
    }
    std::vector<std::pair<std::string, Tensor>> sorted;
    for (size_t i : order) sorted.push_back(tensors[i]);
    tensors = std::move(sorted);
    json::write(this->header, header);
    this->header.append((8 - this->header.size() % 8) % 8, ' ');
  }

  std::set<std::string> names_;
};

// Calls sink(bytes, n) for every piece of the file, in order.
void write_plan(const Plan& plan, const std::function<void(const void*, size_t)>& sink) {
  uint64_t n = plan.header.size();
  unsigned char len[8];
  for (int k = 0; k < 8; ++k) len[k] = static_cast<unsigned char>(n >> (8 * k));
  sink(len, 8);
  sink(plan.header.data(), plan.header.size());
  autograd::NoGradGuard no_grad;
  for (auto& [name, t0] : plan.tensors) {
    Tensor t = t0.detach();
    if (!t.is_contiguous()) t = t.contiguous();  // one tensor's copy at a time, never the whole file
    if (t.numel() > 0) sink(t.data_ptr(), t.nbytes());
  }
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

mode_t new_file_mode(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) return st.st_mode & 07777;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Umask:", 0) == 0) return 0666 & ~mode_t(std::stoul(line.substr(6), nullptr, 8));
  mode_t mask = ::umask(022);
  ::umask(mask);
  return 0666 & ~mask;
}

void atomic_save(const std::string& path, const Plan& plan) {
  size_t slash = path.rfind('/');
  std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  struct stat st;
  KINDLE_CHECK(::stat(folder.c_str(), &st) == 0 && S_ISDIR(st.st_mode), "kindle.save: parent directory ", folder,
               " does not exist");
  mode_t mode = new_file_mode(path);
  std::string tmpl = folder + "/." + base + ".XXXXXX.tmp";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  int fd = ::mkstemps(buf.data(), 4);
  KINDLE_CHECK(fd >= 0, sys_error("kindle.save: cannot create a temporary file in " + folder));
  std::string tmp(buf.data());
  try {
    write_plan(plan, [&](const void* p, size_t n) {
      const char* c = static_cast<const char*>(p);
      while (n) {
        ssize_t k = ::write(fd, c, std::min<size_t>(n, size_t(1) << 30));
        if (k < 0 && errno == EINTR) continue;
        KINDLE_CHECK(k > 0, sys_error("kindle.save: writing " + path));
        c += k;
        n -= size_t(k);
      }
    });
    KINDLE_CHECK(::fchmod(fd, mode) == 0, sys_error("kindle.save: chmod " + tmp));
    KINDLE_CHECK(::fsync(fd) == 0, sys_error("kindle.save: fsync " + tmp));
    int rc = ::close(fd);
    fd = -1;
    KINDLE_CHECK(rc == 0, sys_error("kindle.save: closing " + tmp));
    KINDLE_CHECK(::rename(tmp.c_str(), path.c_str()) == 0, sys_error("kindle.save: renaming onto " + path));
  } catch (...) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  // Makes the rename itself durable.
  int dfd = ::open(folder.c_str(), O_RDONLY);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

// ---------------------------------------------------------------------------------------------
// load
// ---------------------------------------------------------------------------------------------

// Random access to the bytes of a file or a string.
struct Source {
  std::function<bool(uint64_t, void*, size_t)> read_at;  // false if the source ends first
  uint64_t size;
  std::string name;
};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw ValueError("kindle.load: " + name + ": " + what);
}

std::string short_json(const json::Node& n) {
  std::string s;
  try {
    json::write(s, n);
  } catch (const Error&) {
    s = "<invalid>";
  }
  return s.size() > 200 ? s.substr(0, 200) + "..." : s;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

struct Spec {
  std::string key;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t begin, end;
};

Spec check_entry(const std::string& name, const std::string& key, const json::Node& entry) {
  std::string what = "tensor '" + key + "'";
  if (entry.type != json::Node::Type::Object) fail(name, what + ": entry must be an object, got " + entry.type_name());
  Spec s;
  s.key = key;
  const json::Node* dt = entry.find("dtype");
  if (!dt || dt->type != json::Node::Type::String || !st_dtype(dt->s, s.dtype))
    fail(name, what + ": unsupported dtype " + (dt ? short_json(*dt) : std::string("None")) +
                   "; expected one of ['BF16', 'BOOL', 'C64', 'F16', 'F32', 'F64', 'I16', 'I32', 'I64', 'I8', 'U8']");
  const json::Node* shape = entry.find("shape");
  bool shape_ok = shape && shape->type == json::Node::Type::Array;
  if (shape_ok)
    for (auto& d : shape->array)
      shape_ok = shape_ok && (d.type == json::Node::Type::Int || d.type == json::Node::Type::BigInt);
  if (!shape_ok)
    fail(name, what + ": shape must be a list of integers, got " + (shape ? short_json(*shape) : std::string("None")));
  const json::Node* off = entry.find("data_offsets");
  bool off_ok = off && off->type == json::Node::Type::Array && off->array.size() == 2;
  if (off_ok)
    for (auto& o : off->array) off_ok = off_ok && (o.type == json::Node::Type::Int || o.type == json::Node::Type::BigInt);
  if (!off_ok)
    fail(name, what + ": data_offsets must be a list of two integers, got " +
                   (off ? short_json(*off) : std::string("None")));
  // numel, or failure if a size is negative, the rank too high, or the strides overflow int64.
  bool valid = shape->array.size() <= kMaxDims;
  __int128 numel = 1, span = 1;
  for (auto& d : shape->array) {
    if (!valid) break;
    if (d.type == json::Node::Type::BigInt || d.i < 0) {
      valid = false;
      break;
    }
    numel *= d.i;
    span *= std::max<int64_t>(d.i, 1);
    if (span > kMaxNumel) valid = false;
    else s.shape.push_back(d.i);
  }
  if (!valid)
    fail(name, what + ": invalid shape " + short_json(*shape) +
                   " (negative, too many dimensions, or more elements than fit in 64 bits)");
  const json::Node &b = off->array[0], &e = off->array[1];
  std::string offs = short_json(*off);
  // Big integers are out of every valid range; report them as Python would (out of order or size).
  if (b.type == json::Node::Type::BigInt || e.type == json::Node::Type::BigInt || b.i < 0 || e.i < b.i) {
    bool neg = (b.type == json::Node::Type::BigInt ? b.s[0] == '-' : b.i < 0) ||
               (e.type == json::Node::Type::BigInt && e.s[0] == '-');
    if (neg || (b.type != json::Node::Type::BigInt && e.type != json::Node::Type::BigInt))
      fail(name, what + ": data_offsets " + offs + " are out of order");
    fail(name, what + ": data_offsets " + offs + " do not match shape " + shape_str(s.shape) + " of " + dt->s);
  }
  s.begin = b.i;
  s.end = e.i;
  __int128 need = numel * __int128(itemsize(s.dtype));
  if (__int128(s.end - s.begin) != need) {
    std::string need_s;
    for (__int128 v = need; ; v /= 10) {
      need_s.insert(need_s.begin(), char('0' + int(v % 10)));
      if (v < 10) break;
    }
    fail(name, what + ": data_offsets " + offs + " span " + std::to_string(s.end - s.begin) + " bytes but shape " +
                   shape_str(s.shape) + " of " + dt->s + " needs " + need_s);
  }
  return s;
}

// Tensors must tile the data section exactly: no gaps, no overlaps, nothing past the end.
void check_layout(const std::string& name, std::vector<Spec>& specs, uint64_t data_len) {
  std::stable_sort(specs.begin(), specs.end(),
                   [](const Spec& a, const Spec& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  int64_t pos = 0;
  for (auto& s : specs) {
    if (s.begin != pos)
      fail(name, "tensor '" + s.key + "': data_offsets start at " + std::to_string(s.begin) + ", which " +
                     (s.begin < pos ? "overlaps the previous tensor" : "leaves a gap before it") + " (expected " +
                     std::to_string(pos) + ")");
    pos = s.end;
  }
  if (uint64_t(pos) > data_len)
    fail(name, "tensor data ends at byte " + std::to_string(pos) + " but the file holds only " +
                   std::to_string(data_len) + " bytes of data; the file is truncated");
  if (uint64_t(pos) != data_len)
    fail(name, std::to_string(data_len - uint64_t(pos)) + " bytes after the last tensor are not described by the header");
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
    fail(name, "'kindle' metadata: unexpected node " + short_json(node));
  const std::string& tag = node.object[0].first;
  const json::Node& value = node.object[0].second;
  if (tag == "tensor") {
    const Tensor* t = value.type == json::Node::Type::String ? tensors.find(value.s) : nullptr;
    if (!t)
      fail(name, "'kindle' metadata references tensor " + short_json(value) + ", which the file does not hold");
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
      for (auto& pair : value.array) {
        if (pair.type != json::Node::Type::Array || pair.array.size() != 2 ||
            (pair.array[0].type != json::Node::Type::String && pair.array[0].type != json::Node::Type::Int))
          fail(name, "'kindle' metadata: dict item " + short_json(pair) + " is not a [str or int key, value] pair");
        Value key = pair.array[0].type == json::Node::Type::String ? Value(pair.array[0].s) : Value(pair.array[0].i);
        Value v = decode(name, pair.array[1], tensors, depth + 1);
        bool replaced = false;
        for (auto& kv : out)
          if (kv.first == key) {
            kv.second = v;
            replaced = true;
          }
        if (!replaced) out.emplace_back(std::move(key), std::move(v));
      }
      return Value::dict(std::move(out));
    }
    Value::Items items;
    for (auto& v : value.array) items.push_back(decode(name, v, tensors, depth + 1));
    if (tag == "list") return Value::list(std::move(items));
    if (tag == "tuple") return Value::tuple(std::move(items));
    return Value::set(std::move(items));
  }
  fail(name, "'kindle' metadata: unexpected node " + short_json(node));
}

Value load_source(const Source& src) {
  const std::string& name = src.name;
  if (src.size < 8) fail(name, "file is " + std::to_string(src.size) + " bytes, too short for a safetensors header");
  unsigned char len[8];
  if (!src.read_at(0, len, 8)) fail(name, "file truncated inside the header");
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | len[k];
  if (len[0] == 'P' && len[1] == 'K')
    fail(name, "this looks like a torch.save zip checkpoint; the C++ reader only reads safetensors files "
               "(load it with kindle.load in Python and re-save it with kindle.save)");
  if (n > src.size - 8)
    fail(name, "header length " + std::to_string(n) + " is larger than the rest of the file (" +
                   std::to_string(src.size - 8) + " bytes); the file is truncated or not a safetensors file");
  if (n > kMaxHeader)
    fail(name, "header length " + std::to_string(n) + " exceeds the " + std::to_string(kMaxHeader) + "-byte limit");
  std::string raw(n, '\0');
  if (!src.read_at(8, raw.data(), n)) fail(name, "file truncated inside the header");
  json::Node header;
  std::string err;
  if (!json::parse(raw, header, err)) fail(name, "header is not valid JSON (" + err + ")");
  if (header.type != json::Node::Type::Object)
    fail(name, std::string("header must be a JSON object, got ") + header.type_name());
  const json::Node* metadata = nullptr;
  std::vector<Spec> specs;
  std::vector<std::string> order;
  for (auto& [key, entry] : header.object) {
    if (key == "__metadata__") {
      metadata = &entry;
      continue;
    }
    specs.push_back(check_entry(name, key, entry));
    order.push_back(key);
  }
  if (metadata && metadata->type == json::Node::Type::Null) metadata = nullptr;
  if (metadata) {
    bool ok = metadata->type == json::Node::Type::Object;
    if (ok)
      for (auto& kv : metadata->object) ok = ok && kv.second.type == json::Node::Type::String;
    if (!ok) fail(name, "__metadata__ must be an object of string values");
  }
  check_layout(name, specs, src.size - 8 - n);

  OrderedDict<Tensor> tensors;
  for (auto& s : specs) {
    Tensor t = empty_tensor(s.shape, s.dtype);
    if (s.end > s.begin && !src.read_at(8 + n + uint64_t(s.begin), t.data_ptr(), size_t(s.end - s.begin)))
      fail(name, "file truncated inside tensor '" + s.key + "'");
    tensors.insert(s.key, t);
  }
  const json::Node* tree = metadata ? metadata->find("kindle") : nullptr;
  if (!tree) {
    Value::Entries out;
    for (auto& k : order) out.emplace_back(Value(k), Value(tensors.at(k)));
    return Value::dict(std::move(out));
  }
  json::Node doc;
  if (!json::parse(tree->s, doc, err, kMaxDepth * 4 + 8)) fail(name, "'kindle' metadata is not valid JSON (" + err + ")");
  const json::Node* root = doc.type == json::Node::Type::Object ? doc.find("tree") : nullptr;
  if (!root) fail(name, "'kindle' metadata must be an object with a 'tree'");
  const json::Node* version = doc.find("version");
  if (!version || version->type != json::Node::Type::Int || version->i != kFormatVersion)
    fail(name, "'kindle' metadata has version " + (version ? short_json(*version) : std::string("None")) +
                   "; this Kindle reads version " + std::to_string(kFormatVersion));
  return decode(name, *root, tensors, 0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// public API
// ---------------------------------------------------------------------------------------------

void save(const Value& obj, const std::string& path) {
  Plan plan(obj);
  atomic_save(path, plan);
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

std::string save_to_bytes(const Value& obj) {
  Plan plan(obj);
  std::string out;
  write_plan(plan, [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  return out;
}

Value load_from_bytes(const std::string& bytes, const std::string& name) {
  Source src;
  src.size = bytes.size();
  src.name = name;
  src.read_at = [&](uint64_t off, void* dst, size_t n) {
    if (off > bytes.size() || n > bytes.size() - off) return false;
    std::memcpy(dst, bytes.data() + off, n);
    return true;
  };
  return load_source(src);
}

Value load_value(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  KINDLE_CHECK(fd >= 0, sys_error("kindle.load: cannot open " + path));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  KINDLE_CHECK(::fstat(fd, &st) == 0, sys_error("kindle.load: stat " + path));
  KINDLE_CHECK(!S_ISDIR(st.st_mode), "kindle.load: ", path, " is a directory");
  Source src;
  src.size = uint64_t(st.st_size);
  src.name = path;
  src.read_at = [fd](uint64_t off, void* dst, size_t n) {
    char* c = static_cast<char*>(dst);
    while (n) {
      ssize_t k = ::pread(fd, c, std::min<size_t>(n, size_t(1) << 30), off_t(off));
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) return false;
      c += k;
      n -= size_t(k);
      off += uint64_t(k);
    }
    return true;
  };
  return load_source(src);
}

StateDict load(const std::string& path) {
  Value v = load_value(path);
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
