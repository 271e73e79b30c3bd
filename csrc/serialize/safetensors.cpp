// The safetensors format (see safetensors.h).
#include "safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <unordered_set>

#include "json.h"
#include "kindle/autograd.h"
#include "kindle/ops.h"

namespace kindle::safetensors {

namespace {

constexpr int kHeaderDepth = 64;  // a valid header nests 3 deep; anything far deeper is refused
constexpr std::pair<const char*, DType> kDTypes[] = {
    {"F64", kFloat64}, {"F32", kFloat32}, {"F16", kFloat16}, {"BF16", kBFloat16}, {"I64", kInt64}, {"I32", kInt32},
    {"I16", kInt16},   {"I8", kInt8},     {"U8", kUInt8},    {"BOOL", kBool},     {"C64", kComplex64}};

[[noreturn]] void fail(const std::string& name, const std::string& what) {
  throw ValueError("kindle.load: " + name + ": " + what);
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_int(const json::Node& n) { return n.type == json::Node::Type::Int || n.type == json::Node::Type::BigInt; }
bool is_negative(const json::Node& n) { return n.type == json::Node::Type::BigInt ? n.s[0] == '-' : n.i < 0; }

struct Spec {
  size_t index;  // position in the header
  std::string key;
  DType dtype;
  std::vector<int64_t> shape;
  int64_t begin, end;
};

Spec check_entry(const std::string& name, const std::string& key, const json::Node& entry) {
  using T = json::Node::Type;
  std::string what = "tensor '" + key + "'";
  if (entry.type != T::Object) fail(name, what + ": entry must be an object, got " + entry.type_name());
  Spec s;
  s.key = key;
  const json::Node* dt = entry.find("dtype");
  bool known = false;
  for (auto& [n, d] : kDTypes)
    if (dt && dt->type == T::String && dt->s == n) {
      s.dtype = d;
      known = true;
    }
  if (!known)
    fail(name, what + ": unsupported dtype " + (dt ? json::py_repr(*dt) : "None") +
                   "; expected one of ['BF16', 'BOOL', 'C64', 'F16', 'F32', 'F64', 'I16', 'I32', 'I64', 'I8', 'U8']");
  const json::Node* shape = entry.find("shape");
  if (!shape || shape->type != T::Array || !std::all_of(shape->array.begin(), shape->array.end(), is_int))
    fail(name, what + ": shape must be a list of integers, got " + (shape ? json::py_repr(*shape) : "None"));
  const json::Node* off = entry.find("data_offsets");
  if (!off || off->type != T::Array || off->array.size() != 2 || !is_int(off->array[0]) || !is_int(off->array[1]))
    fail(name, what + ": data_offsets must be a list of two integers, got " + (off ? json::py_repr(*off) : "None"));
  // The element count, or failure if a size is negative, the rank too high, or a stride overflows int64.
  bool valid = shape->array.size() <= kMaxDims;
  __int128 numel = 1, span = 1;
  for (auto& d : shape->array) {
    if (!valid || d.type == T::BigInt || d.i < 0) {
      valid = false;
      break;
    }
    numel *= d.i;
    span *= std::max<int64_t>(d.i, 1);
    valid = span <= INT64_MAX;
    s.shape.push_back(d.i);
  }
  if (!valid)
    fail(name, what + ": invalid shape " + json::py_repr(*shape) +
                   " (negative, too many dimensions, or more elements than fit in 64 bits)");
  const json::Node &b = off->array[0], &e = off->array[1];
  std::string offs = json::py_repr(*off);
  if (is_negative(b) || is_negative(e) || (b.type == T::Int && e.type == T::Int && e.i < b.i))
    fail(name, what + ": data_offsets " + offs + " are out of order");
  __int128 need = numel * __int128(itemsize(s.dtype));
  if (b.type == T::BigInt || e.type == T::BigInt)  // beyond every valid size
    fail(name, what + ": data_offsets " + offs + " do not match shape " + shape_str(s.shape) + " of " + dt->s);
  s.begin = b.i;
  s.end = e.i;
  if (__int128(s.end - s.begin) != need)
    fail(name, what + ": data_offsets " + offs + " span " + std::to_string(s.end - s.begin) + " bytes but shape " +
                   shape_str(s.shape) + " of " + dt->s + " needs " + std::to_string(uint64_t(need)));
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

}  // namespace

const char* format_name(DType d) {
  for (auto& [n, dt] : kDTypes)
    if (dt == d) return n;
  return nullptr;
}

Plan::Plan(Named tensors, const Metadata& metadata, const char* who) {
  std::unordered_set<std::string> names;
  for (auto& [name, t] : tensors) {
    KINDLE_CHECK_VALUE(t.defined(), who, ": tensor '", name, "' is undefined");
    KINDLE_CHECK_VALUE(name != "__metadata__", who, ": '__metadata__' is reserved by the safetensors format "
                                                    "and cannot name a tensor");
    KINDLE_CHECK_VALUE(names.insert(name).second, who, ": two tensors are named '", name, "'");
    KINDLE_CHECK_TYPE(format_name(t.dtype()), who, ": tensor '", name, "' has dtype ", t.dtype(),
                      ", which safetensors cannot store");
    KINDLE_CHECK_NOT_IMPLEMENTED(t.device().is_cpu(), who, ": cannot save the bytes of a ", t.device(),
                                 " tensor ('", name, "'): move it with .cpu() first");
  }
  // Offsets in file order (a stable sort, widest dtypes first); entries in the caller's order.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tensors[a].second.element_size() > tensors[b].second.element_size(); });
  std::vector<std::pair<int64_t, int64_t>> offsets(tensors.size());
  int64_t pos = 0;
  for (size_t i : order) {
    int64_t n = int64_t(tensors[i].second.nbytes());
    offsets[i] = {pos, pos + n};
    pos += n;
  }
  json::Node header = json::object(), meta = json::object();
  for (auto& [k, v] : metadata) meta.object.emplace_back(k, json::str(v));
  header.object.emplace_back("__metadata__", std::move(meta));
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i].second;
    json::Node e = json::object(), shape = json::array(), off = json::array();
    e.object.emplace_back("dtype", json::str(format_name(t.dtype())));
    for (int64_t s : t.sizes()) shape.array.push_back(json::integer(s));
    e.object.emplace_back("shape", std::move(shape));
    off.array.push_back(json::integer(offsets[i].first));
    off.array.push_back(json::integer(offsets[i].second));
    e.object.emplace_back("data_offsets", std::move(off));
    header.object.emplace_back(tensors[i].first, std::move(e));
  }
  json::write(header_, header, who);
  header_.append((8 - header_.size() % 8) % 8, ' ');
  for (size_t i : order) tensors_.push_back(std::move(tensors[i]));
}

void Plan::write(const Sink& sink) const {
  uint64_t n = header_.size();
  unsigned char len[8];
  for (int k = 0; k < 8; ++k) len[k] = static_cast<unsigned char>(n >> (8 * k));
  sink(len, 8);
  sink(header_.data(), header_.size());
  for (auto& [name, t] : tensors_) write_bytes(t, sink);
}

void write_bytes(const Tensor& t0, const Sink& sink) {
  autograd::NoGradGuard no_grad;
  Tensor t = t0.detach();
  if (!t.is_contiguous()) t = t.contiguous();
  if (t.numel() > 0) sink(t.data_ptr(), t.nbytes());
}

bool read_bytes(const Source& src, uint64_t offset, const Tensor& t) {
  return t.nbytes() == 0 || src.read_at(offset, t.data_ptr(), t.nbytes());
}

Source fd_source(int fd, uint64_t base, uint64_t size, std::string name) {
  Source src;
  src.size = size;
  src.name = std::move(name);
  src.read_at = [fd, base](uint64_t off, void* dst, size_t n) {
    char* c = static_cast<char*>(dst);
    off += base;
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
  return src;
}

Source bytes_source(const std::string& bytes, std::string name) {
  Source src;
  src.size = bytes.size();
  src.name = std::move(name);
  src.read_at = [&bytes](uint64_t off, void* dst, size_t n) {
    if (off > bytes.size() || n > bytes.size() - off) return false;
    std::memcpy(dst, bytes.data() + off, n);
    return true;
  };
  return src;
}

Contents read(const Source& src, uint64_t max_header) {
  using T = json::Node::Type;
  const std::string& name = src.name;
  if (src.size < 8) fail(name, "file is " + std::to_string(src.size) + " bytes, too short for a safetensors header");
  unsigned char len[8];
  if (!src.read_at(0, len, 8)) fail(name, "file truncated inside the header");
  uint64_t n = 0;
  for (int k = 7; k >= 0; --k) n = (n << 8) | len[k];
  if (n > src.size - 8)
    fail(name, "header length " + std::to_string(n) + " is larger than the rest of the file (" +
                   std::to_string(src.size - 8) + " bytes); the file is truncated or not a safetensors file");
  if (n > max_header)
    fail(name, "header length " + std::to_string(n) + " exceeds the " + std::to_string(max_header) + "-byte limit");
  std::string raw(n, '\0');
  if (!src.read_at(8, raw.data(), n)) fail(name, "file truncated inside the header");
  json::Node header;
  std::string err;
  if (!json::parse(raw, header, err, kHeaderDepth)) fail(name, "header is not valid JSON (" + err + ")");
  if (header.type != T::Object) fail(name, std::string("header must be a JSON object, got ") + header.type_name());
  Contents out;
  std::vector<Spec> specs;
  for (auto& [key, entry] : header.object) {
    if (key != "__metadata__") {
      specs.push_back(check_entry(name, key, entry));
      specs.back().index = specs.size() - 1;
      continue;
    }
    if (entry.type == T::Null) continue;
    bool ok = entry.type == T::Object;
    for (auto& kv : entry.object) ok = ok && kv.second.type == T::String;
    if (!ok) fail(name, "__metadata__ must be an object of string values");
    Metadata m;
    for (auto& [k, v] : entry.object) m.emplace_back(k, v.s);
    out.metadata = std::move(m);
  }
  check_layout(name, specs, src.size - 8 - n);  // (sorts specs by offset: reads go front to back)
  out.tensors.resize(specs.size());
  for (auto& s : specs) {
    Tensor t = empty_tensor(s.shape, s.dtype);
    if (!read_bytes(src, 8 + n + uint64_t(s.begin), t))
      fail(name, "file truncated inside tensor '" + s.key + "'");
    out.tensors[s.index] = {s.key, std::move(t)};
  }
  return out;
}

}  // namespace kindle::safetensors
