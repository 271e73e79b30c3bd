// The pickle of a kindle::Value as torch.save writes it (protocol 2; see torch_pickle.h).
#include <cstring>
#include <map>
#include <unordered_map>

#include "kindle/autograd.h"
#include "kindle/ops.h"
#include "torch_pickle.h"

namespace kindle::torch_pickle {

namespace {

class Pickler {
 public:
  std::string out;
  std::vector<Tensor> storages;

  void dump(const Value& v) {
    out += "\x80\x02";
    save(v, 0);
    out += '.';
  }

 private:
  std::unordered_map<const TensorImpl*, uint32_t> tensors_;  // memo index: a tensor reached twice is one object
  std::map<std::pair<const StorageImpl*, DType>, size_t> storage_keys_;  // storages written so far
  uint32_t memo_ = 0;

  void le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  }
  void str(const std::string& s) {
    out += 'X';
    le(s.size(), 4);
    KINDLE_CHECK_VALUE(s.size() < 0xffffffffu, "kindle.save: a string of ", s.size(), " bytes is too long");
    out += s;
  }
  void integer(int64_t v) {
    if (v >= 0 && v < 256) {
      out += 'K';
      le(uint64_t(v), 1);
    } else if (v >= 0 && v < 65536) {
      out += 'M';
      le(uint64_t(v), 2);
    } else if (v >= INT32_MIN && v <= INT32_MAX) {
      out += 'J';
      le(uint64_t(uint32_t(int32_t(v))), 4);
    } else {
      out += '\x8a';
      out += char(8);
      le(uint64_t(v), 8);
    }
  }
  void global(const std::string& path) {  // "module.qualname"
    const size_t dot = path.rfind('.');
    KINDLE_CHECK_VALUE(dot != std::string::npos && path.find('\n') == std::string::npos,
                       "kindle.save: invalid global name '", path, "'");
    global(path.substr(0, dot).c_str(), path.c_str() + dot + 1);
  }
  void global(const char* module, const char* name) {
    out += 'c';
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void ints(IntArrayRef v) {
    out += '(';
    for (int64_t x : v) integer(x);
    out += 't';
  }
  void tensor(const Tensor& t) {
    const char* sname = storage_name(t.dtype());
    KINDLE_CHECK_TYPE(sname != nullptr, "kindle.save: cannot save a tensor of dtype ", t.dtype());
    if (auto seen = tensors_.find(t.impl()); seen != tensors_.end()) {
      out += 'j';  // LONG_BINGET
      le(seen->second, 4);
      return;
    }
    // A CPU tensor is written as a view of its whole storage, each storage once (per dtype), so
    // that views of one storage and tied weights load as views of one storage again, as
    // torch.save's do; anything else as a contiguous copy of its own.
    const StorageImpl* storage = t.impl()->storage().get();
    const int64_t item = int64_t(t.element_size());
    const bool whole = t.device().is_cpu() && storage->nbytes() % size_t(item) == 0;
    size_t key;
    if (auto it = storage_keys_.find({storage, t.dtype()}); whole && it != storage_keys_.end()) {
      key = it->second;
    } else {
      key = storages.size();
      autograd::NoGradGuard no_grad;
      storages.push_back(whole ? make_view(t, {int64_t(storage->nbytes()) / item}, {1}, 0) : t.detach().contiguous());
      if (whole) storage_keys_.emplace(std::make_pair(storage, t.dtype()), key);
    }
    const Tensor& s = storages[key];
    global("torch._utils", "_rebuild_tensor_v2");
    out += '(';
    out += '(';
    str("storage");
    global("torch", sname);
    str(std::to_string(key));
    str("cpu");
    integer(s.numel());
    out += "tQ";  // TUPLE, BINPERSID
    integer(whole ? t.storage_offset() : 0);
    ints(whole ? t.sizes() : s.sizes());
    ints(whole ? t.strides() : s.strides());
    out += t.requires_grad() ? '\x88' : '\x89';
    global("collections", "OrderedDict");
    out += ")Rt";  // OrderedDict(), then the argument tuple
    out += "Rr";     // REDUCE, LONG_BINPUT
    le(memo_, 4);
    tensors_.emplace(t.impl(), memo_++);
  }
  void save(const Value& v, int depth) {
    KINDLE_CHECK_VALUE(depth <= kMaxDepth, "kindle.save: containers nested deeper than ", kMaxDepth, " levels");
    switch (v.kind()) {
      case Value::Kind::None: out += 'N'; return;
      case Value::Kind::Bool: out += v.to_bool() ? '\x88' : '\x89'; return;
      case Value::Kind::Int: integer(v.to_int()); return;
      case Value::Kind::Double: {
        const double d = v.to_double();
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        out += 'G';
        for (int i = 7; i >= 0; --i) out.push_back(char((bits >> (8 * i)) & 0xff));
        return;
      }
      case Value::Kind::String: str(v.to_string()); return;
      case Value::Kind::Bytes: {  // protocol 2 has no bytes: _codecs.encode(latin-1 text, 'latin1'), as Python writes
        const std::string& b = v.to_bytes();
        if (b.empty()) {
          global("__builtin__", "bytes");
          out += ")R";
          return;
        }
        global("_codecs", "encode");
        out += '(';
        str(latin1_to_utf8(b));
        str("latin1");
        out += "tR";
        return;
      }
      case Value::Kind::Object: {
        const Value::Object& o = v.object();
        global(o.type);
        out += '(';
        for (const Value& x : o.args) save(x, depth + 1);
        out += 't';
        if (o.by_new) {
          KINDLE_CHECK_VALUE(o.kwargs.is_none(), "kindle.save: keyword arguments of ", o.type, " cannot be written");
          out += '\x81';  // NEWOBJ
        } else {
          out += 'R';
        }
        if (!o.state.is_none()) {
          save(o.state, depth + 1);
          out += 'b';
        }
        return;
      }
      case Value::Kind::DType: global("torch", dtype_name(v.to_dtype())); return;
      case Value::Kind::Tensor: tensor(v.to_tensor()); return;
      case Value::Kind::List:
        out += "](";
        for (const Value& x : v.items()) save(x, depth + 1);
        out += 'e';
        return;
      case Value::Kind::Tuple:
        out += '(';
        for (const Value& x : v.items()) save(x, depth + 1);
        out += 't';
        return;
      case Value::Kind::Set:
        global("__builtin__", "set");
        out += "](";
        for (const Value& x : v.items()) save(x, depth + 1);
        out += "e\x85R";  // APPENDS, TUPLE1, REDUCE
        return;
      case Value::Kind::Dict:
        if (v.is_ordered_dict()) {
          global("collections", "OrderedDict");
          out += ")R(";
        } else {
          out += "}(";
        }
        for (const auto& [k, x] : v.entries()) {
          save(k, depth + 1);
          save(x, depth + 1);
        }
        out += 'u';
        if (!v.dict_metadata().is_none()) {  // BUILD {'_metadata': ...}, as torch's state dicts
          out += '}';
          str("_metadata");
          save(v.dict_metadata(), depth + 1);
          out += "sb";
        }
        return;
    }
  }
};

}  // namespace

std::string pickle(const Value& obj, std::vector<Tensor>& storages) {
  Pickler p;
  p.dump(obj);
  storages = std::move(p.storages);
  return std::move(p.out);
}

}  // namespace kindle::torch_pickle
