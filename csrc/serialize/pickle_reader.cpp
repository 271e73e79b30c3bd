// The restricted unpickler of PyTorch's checkpoints (see torch_pickle.h). Opcodes as CPython's
// Lib/pickletools.py documents them; only protocols 0-5's data opcodes, never INST/OBJ/EXT.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/ops.h"
#include "torch_pickle.h"

namespace kindle::torch_pickle {

namespace {

constexpr size_t kMaxDims = 64;
constexpr uint64_t kMaxViewNumel = uint64_t(1) << 40;  // elements one expanded view may address
constexpr uint64_t kFactor = 64, kSlack = uint64_t(1) << 20;  // views and trees: kFactor x the file + kSlack
constexpr uint64_t kMaxMemoIndex = 0xffffffffu;  // LONG_BINPUT's own limit

// The callables and classes a checkpoint may name; User: one the front end allowed (add_safe_globals).
enum class G : uint8_t {
  OrderedDict, Set, FrozenSet, Encode, Bytes, Rebuild, RebuildV2, Param, ParamState, Size, Device,
  StorageType, Script, BuildList, RestoreTag, User
};

// What PyTorch's own globals that Kindle does not read are, for the error message.
const char* unsupported_hint(const std::string& key) {
  static const std::pair<const char*, const char*> hints[] = {
      {"torch._utils._rebuild_qtensor", "quantized tensors are not supported"},
      {"torch._utils._rebuild_sparse_tensor", "sparse tensors are not supported"},
      {"torch._utils._rebuild_wrapper_subclass", "tensor subclasses are not supported"},
      {"torch._utils._rebuild_meta_tensor_no_storage", "meta tensors are not supported"},
      {"torch._utils._rebuild_nested_tensor", "nested tensors are not supported"},
      {"torch._utils._rebuild_tensor_v3", "this tensor dtype is not supported"},
      {"torch.UntypedStorage", "untyped storages are not supported"}};
  for (auto& [k, h] : hints)
    if (key == k) return h;
  return "";
}

struct Item;
using Parts = std::vector<Item>;

// A stack entry: a Value, or what only a pickle's machinery handles (a global, a storage, a tuple
// holding one of those, as a persistent id or REDUCE's arguments).
struct Item {
  enum class K : uint8_t { Value, Global, Storage, Parts } k = K::Value;
  Value v;  // Value; Storage: the flat tensor
  G g{};
  DType dtype = kFloat32;  // StorageType
  bool object = false;     // a Value dict that is a TorchScript object (BUILD sets its state)
  bool user = false;       // a Value::Object an allowed global made (BUILD may set its state)
  std::string name;        // a global's or an object's class
  std::shared_ptr<Parts> parts;
};

const void* container_id(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::List:
    case Value::Kind::Tuple:
    case Value::Kind::Set: return &v.items();
    case Value::Kind::Dict: return &v.entries();
    case Value::Kind::Object: return &v.object();
    default: return nullptr;
  }
}

std::string tuple_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size() && i < 8; ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + (v.size() > 8 ? ", ...)" : v.size() == 1 ? ",)" : ")");
}

// Python's name for what an item is, for messages ("OrderedDict", "Size").
std::string type_name(const Value& v) {
  if (v.is_ordered_dict()) return "OrderedDict";
  if (v.kind() == Value::Kind::Object) {
    const std::string& t = v.object().type;
    return t.substr(t.rfind('.') + 1);
  }
  return value_kind_name(v.kind());
}
class Unpickler {
 public:
  Unpickler(std::string_view data, std::string name, uint64_t file_size, StorageFn storage, const ReadOptions& options)
      : data_(data), name_(std::move(name)), storage_(std::move(storage)), opt_(options) {
    const uint64_t size = std::max<uint64_t>(file_size, data.size());
    budget_ = budget_limit_ = opt_.memory_factor * size + opt_.memory_slack;
    view_budget_ = kFactor * size + kSlack;
    hash_work_ = 1000000 + 16 * uint64_t(data.size());
    repeat_budget_ = size + (uint64_t(64) << 10);
  }

  Value load();

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw ValueError("kindle.load: " + name_ + ": invalid torch checkpoint: " + what);
  }

  // ---- the byte stream
  const char* take(uint64_t n) {
    if (data_.size() - pos_ < n) fail("the pickle ends inside an opcode");
    const char* p = data_.data() + pos_;
    pos_ += n;
    return p;
  }
  uint64_t uint(int n) {
    auto p = reinterpret_cast<const unsigned char*>(take(uint64_t(n)));
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
    return v;
  }
  std::string line() {
    const size_t end = data_.find('\n', pos_);
    if (end == std::string_view::npos || end - pos_ > 256) fail("a text opcode's line is missing or too long");
    std::string s(data_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  int64_t parse_int(const std::string& s) {
    std::string t = s;
    if (!t.empty() && t.back() == 'L') t.pop_back();
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(t.c_str(), &end, 10);
    if (t.empty() || *end || errno) fail("invalid integer literal '" + s.substr(0, 40) + "'");
    return v;
  }

  // ---- budgets
  void charge(uint64_t n, const char* what) {
    if (n > budget_)
      fail("the pickle builds more objects than a file of its size may (about " + std::to_string(budget_limit_) +
           " bytes; " + what + ")");
    budget_ -= n;
  }
  void charge_copy(const Item& it) {  // a string copied by the memo or DUP
    charge(1 + (it.v.is_string() ? it.v.to_string().size() : 0) + it.name.size(), "copies of strings");
  }

  // ---- the stack
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  Item pop() {
    if (stack_.size() <= floor()) fail("an opcode needs a value the stack does not hold");
    Item it = std::move(stack_.back());
    stack_.pop_back();
    return it;
  }
  Item& top() {
    if (stack_.size() <= floor()) fail("an opcode needs a value the stack does not hold");
    return stack_.back();
  }
  Parts pop_mark() {
    if (marks_.empty()) fail("an opcode needs a MARK the pickle did not set");
    const size_t m = marks_.back();
    marks_.pop_back();
    Parts out(std::make_move_iterator(stack_.begin() + std::ptrdiff_t(m)), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return out;
  }
  void push(Value v) {
    Item it;
    it.v = std::move(v);
    stack_.push_back(std::move(it));
  }
  const Value& value(const Item& it, const char* where) const {
    if (it.k == Item::K::Value) return it.v;
    fail(std::string(where) + ": " +
         (it.k == Item::K::Global ? "the global " + it.name + " cannot be a value"
                                  : it.k == Item::K::Storage ? std::string("a storage cannot be a value")
                                                             : std::string("a tuple holding a global cannot be a value")));
  }

  // ---- containers: registered when made, frozen when placed in another
  struct Meta {
    uint64_t expanded = 1;  // nodes of the tree this container expands to
    int depth = 1;
    bool frozen = false;
    std::map<std::string, size_t> keys;  // a dict's keys while it is filled (ordered: no hash flooding)
  };
  Value fresh(Value v) {
    meta_[container_id(v)] = Meta{};  // (the address of a container that died may come back)
    charge(64, "containers");
    return v;
  }
  Meta& meta(const Value& v) { return meta_.at(container_id(v)); }
  void adopt(const Value& parent, const Value& child) {
    Meta& pm = meta(parent);
    if (pm.frozen) fail("a container is changed after it was placed in another (a cyclic structure)");
    uint64_t expanded = 1;
    int depth = 0;
    if (const void* id = container_id(child)) {
      if (id == container_id(parent)) fail("a container contains itself");
      Meta& cm = meta_.at(id);
      cm.frozen = true;
      cm.keys.clear();
      expanded = cm.expanded;
      depth = cm.depth;
    }
    pm.depth = std::max(pm.depth, depth + 1);
    if (pm.depth > kMaxDepth) fail("containers nested deeper than " + std::to_string(kMaxDepth) + " levels");
    pm.expanded += expanded;
    if (pm.expanded > kFactor * std::max<uint64_t>(data_.size(), 1) + kSlack)
      fail("shared containers expand to more values than a pickle of its size may hold");
    charge(16, "container items");
  }
  Value sequence(Value::Kind kind, Parts parts, const char* where) {
    Value out = fresh(kind == Value::Kind::List ? Value::list() : kind == Value::Kind::Tuple ? Value::tuple() : Value::set());
    for (auto& p : parts) {
      const Value& v = value(p, where);
      adopt(out, v);
      out.items().push_back(v);
    }
    return out;
  }
  // A dict key or set item as a string that tells keys apart: C++ allows str and int keys (and
  // plain scalars in sets); Python also None, bool, float, bytes, dtypes and tuples and frozensets
  // of those. Equal Python keys of different types (1, 1.0, True) stay apart here: the Python
  // front end merges them as it builds its dict, in order, as Python would. The work is charged.
  std::string key_of(const Value& k, bool in_set) {
    std::string out;
    encode_key(k, out, in_set ? "set item" : "dict key", in_set);
    if (out.size() > hash_work_) fail("the pickle asks for more hashing work than its size allows");
    hash_work_ -= out.size();
    return out;
  }
  void encode_key(const Value& k, std::string& out, const char* what, bool scalars) {
    switch (k.kind()) {
      case Value::Kind::String: out += 's' + std::to_string(k.to_string().size()) + ':' + k.to_string(); return;
      case Value::Kind::Int: out += 'i' + std::to_string(k.to_int()) + ';'; return;
      default: break;
    }
    if (opt_.python || scalars) {
      switch (k.kind()) {
        case Value::Kind::None: out += 'N'; return;
        case Value::Kind::Bool: out += k.to_bool() ? 'T' : 'F'; return;
        case Value::Kind::Double: {
          char buf[32];
          std::snprintf(buf, sizeof buf, "f%.17g;", k.to_double());
          out += buf;
          return;
        }
        default: break;
      }
    }
    if (opt_.python) {
      switch (k.kind()) {
        case Value::Kind::Bytes: out += 'b' + std::to_string(k.to_bytes().size()) + ':' + k.to_bytes(); return;
        case Value::Kind::DType: out += 'd' + std::string(dtype_name(k.to_dtype())) + ';'; return;
        case Value::Kind::Tuple:
          out += '(';
          for (const Value& x : k.items()) encode_key(x, out, what, scalars);
          out += ')';
          return;
        case Value::Kind::Object:
          if (k.object().type == "torch.Size") {  // a tuple
            encode_key(k.object().args.at(0), out, what, scalars);
            return;
          }
          if (k.object().type == "builtins.int") {
            const std::string& b = k.object().args.at(0).to_bytes();
            out += 'I' + std::to_string(b.size()) + ':' + b;
            return;
          }
          if (k.object().type == "builtins.frozenset") {  // its items, in a canonical order
            std::vector<std::string> parts;
            for (const Value& x : k.object().args.at(0).items()) {
              parts.emplace_back();
              encode_key(x, parts.back(), what, scalars);
            }
            std::sort(parts.begin(), parts.end());
            out += '{';
            for (auto& p : parts) out += p;
            out += '}';
            return;
          }
          break;
        default: break;
      }
    }
    if (!opt_.python && !scalars)
      fail(std::string(what) + ": dict keys must be str or int, got a " + value_kind_name(k.kind()));
    fail("a " + type_name(k) + " cannot be a " + what + " in a checkpoint (allowed: str, bytes, int, float, bool, "
         "None, dtypes, and tuples and frozensets of these)");
  }
  void set_item(Value& dict, const Value& key, const Value& v, const char* where) {
    Meta& m = meta(dict);
    if (m.frozen) fail(std::string(where) + ": a dict is changed after it was placed in another");
    std::string k = key_of(key, false);
    adopt(dict, key);
    adopt(dict, v);
    Meta& dm = meta(dict);  // (adopt may have grown meta_)
    auto [it, fresh_key] = dm.keys.try_emplace(std::move(k), dict.entries().size());
    if (fresh_key) dict.entries().emplace_back(key, v);
    else dict.entries()[it->second].second = v;
  }
  void add_to_set(Value& set, const Value& v) {
    std::string k = key_of(v, true);
    if (meta(set).keys.count(k)) return;
    adopt(set, v);
    meta(set).keys.emplace(std::move(k), set.items().size());
    set.items().push_back(v);
  }
  // A Value::Object registered as a container over its arguments (depth, expansion, budget).
  Value object(std::string type, Value::Items args, bool by_new = false) {
    Value o = fresh(Value::object(std::move(type), {}, by_new));
    for (Value& a : args) {
      adopt(o, a);
      o.object().args.push_back(std::move(a));
    }
    return o;
  }

  std::string what_is(const Item& it) const {
    return it.k == Item::K::Value ? type_name(it.v) : it.k == Item::K::Global ? "global " + it.name
                                                    : it.k == Item::K::Storage ? std::string("storage") : "tuple";
  }
  static const char* op_name(unsigned char op) {
    switch (op) {
      case 'X': return "BINUNICODE";
      case 0x8c: return "SHORT_BINUNICODE";
      case 0x8d: return "BINUNICODE8";
      case 'T': return "BINSTRING";
      case 'U': return "SHORT_BINSTRING";
      case 'B': return "BINBYTES";
      case 'C': return "SHORT_BINBYTES";
      case 0x8e: return "BINBYTES8";
      default: return "BYTEARRAY8";
    }
  }
  // Protocol 2's byte strings, as Python's Unpickler(encoding=) reads them.
  Value byte_string(std::string raw) {
    std::string e;
    for (char c : opt_.encoding) e += char(std::tolower(static_cast<unsigned char>(c)));
    if (e.empty() || e == "utf-8" || e == "utf8") return Value(std::move(raw));  // (Python checks UTF-8)
    if (e == "bytes") return Value::bytes(std::move(raw));
    if (e == "ascii") {
      for (char c : raw)
        if (static_cast<unsigned char>(c) >= 0x80) fail("a BINSTRING is not ASCII (pass encoding='latin1' or 'bytes')");
      return Value(std::move(raw));
    }
    if (e == "latin1" || e == "latin-1" || e == "iso-8859-1") return Value(latin1_to_utf8(raw));
    fail("encoding '" + opt_.encoding.substr(0, 40) + "' is not supported (ASCII, latin1, utf-8 or bytes)");
  }

  // A memo bomb: one value built once, memoized, and handed again and again to a REDUCE that
  // copies it (set(), OrderedDict(), torch.Size) or rebuilds from it (a tensor's argument tuple).
  // The first rebuild from a value is charged as usual; later ones also to a budget of the file's
  // size (torch.save never writes one: it writes a fresh argument tuple for every tensor).
  void charge_repeat(const Item& func, const Item& args, const Parts& parts) {
    const Item* from = nullptr;  // what the call rebuilds from
    uint64_t cost = 0;
    switch (func.g) {
      case G::Rebuild: case G::RebuildV2: case G::Param: case G::ParamState:
        from = &args;
        cost = 640;
        break;
      case G::Set: case G::FrozenSet: case G::OrderedDict: case G::Size:
        if (parts.size() == 1 && parts[0].k == Item::K::Value && parts[0].v.is_sequence() &&
            parts[0].v.items().size() >= 16) {
          from = &parts[0];
          cost = (func.g == G::Size ? 8 : 64) * parts[0].v.items().size();
        }
        break;
      default: break;
    }
    if (!from) return;
    const void* id = from->k == Item::K::Parts ? static_cast<const void*>(from->parts.get()) : container_id(from->v);
    if (!id) return;
    if (rebuilt_from_.insert(id).second) {
      keep_.push_back(*from);  // kept alive, so no later value reuses its address
      return;
    }
    if (cost > repeat_budget_)
      fail("the pickle rebuilds objects from the same memoized value again and again (a memo bomb): the copies "
           "exceed the file's size");
    repeat_budget_ -= cost;
  }

  // ---- globals and calls
  Item global(std::string module, const std::string& name);
  Item call(const Item& func, Parts args);
  Tensor rebuild_tensor(const Parts& a, bool v2);

  std::string_view data_;
  size_t pos_ = 0;
  std::string name_;
  StorageFn storage_;
  const ReadOptions& opt_;
  std::vector<Item> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Item> memo_;
  std::unordered_map<const void*, Meta> meta_;
  uint64_t budget_ = 0, budget_limit_ = 0, view_budget_ = 0, hash_work_ = 0, repeat_budget_ = 0;
  std::unordered_set<const void*> rebuilt_from_;
  std::vector<Item> keep_;
};

Item Unpickler::global(std::string module, const std::string& name) {
  if (module.size() + name.size() > 200) fail("a global's name is too long");
  if (module == "__builtin__") module = "builtins";  // protocol 2's spelling
  const std::string key = module + "." + name;
  Item it;
  it.k = Item::K::Global;
  it.name = key;
  static const std::unordered_map<std::string, G> table = {
      {"collections.OrderedDict", G::OrderedDict}, {"builtins.set", G::Set}, {"builtins.frozenset", G::FrozenSet},
      {"_codecs.encode", G::Encode}, {"builtins.bytes", G::Bytes},
      {"torch._utils._rebuild_tensor", G::Rebuild}, {"torch._utils._rebuild_tensor_v2", G::RebuildV2},
      {"torch._utils._rebuild_parameter", G::Param}, {"torch._utils._rebuild_parameter_with_state", G::ParamState},
      {"torch.Size", G::Size}, {"torch.device", G::Device},
      {"torch.jit._pickle.build_intlist", G::BuildList}, {"torch.jit._pickle.build_doublelist", G::BuildList},
      {"torch.jit._pickle.build_boollist", G::BuildList}, {"torch.jit._pickle.build_tensorlist", G::BuildList},
      {"torch.jit._pickle.build_genericlist", G::BuildList}, {"torch.jit._pickle.restore_type_tag", G::RestoreTag}};
  if (auto f = table.find(key); f != table.end() &&
                                 !(opt_.python && (f->second == G::BuildList || f->second == G::RestoreTag))) {
    it.g = f->second;
    return it;
  }
  if (module == "torch") {
    if (auto d = storage_dtype(name)) {
      it.g = G::StorageType;
      it.dtype = *d;
      return it;
    }
    for (int d = 0; d < kNumDTypes; ++d)
      if (name == dtype_name(DType(d))) {
        Item v;
        v.v = Value(DType(d));
        return v;
      }
  }
  if (!opt_.python && (module == "__torch__" || module.rfind("__torch__.", 0) == 0)) {  // a TorchScript class
    it.g = G::Script;
    return it;
  }
  if (opt_.allowed && opt_.allowed(key)) {
    charge(64, "objects");
    it.g = G::User;
    return it;
  }
  const std::string hint = unsupported_hint(key);
  if (opt_.refused) opt_.refused(key, hint);
  throw ValueError("kindle.load: " + name_ + ": unsupported global: GLOBAL " + key + " is not allowed" +
                   (hint.empty() ? "" : " (" + hint + ")") +
                   " (a checkpoint read by Kindle holds tensors, containers, plain values and TorchScript objects; "
                   "nothing in it is run)");
}

Tensor Unpickler::rebuild_tensor(const Parts& a, bool v2) {
  const char* who = v2 ? "_rebuild_tensor_v2" : "_rebuild_tensor";
  if (a.size() < 4 || a[0].k != Item::K::Storage) fail(std::string(who) + ": expected (storage, offset, size, stride, ...)");
  const Tensor& storage = a[0].v.to_tensor();
  auto ints = [&](const Item& it, const char* what) {
    const Value& v = value(it, who);
    if (v.kind() != Value::Kind::Tuple && v.kind() != Value::Kind::List)
      fail(std::string(who) + ": " + what + " must be a tuple of ints");
    std::vector<int64_t> out;
    for (const Value& x : v.items()) {
      if (x.kind() == Value::Kind::Object && x.object().type == "builtins.int")
        fail(std::string(who) + ": invalid tensor: a " + what + " wider than 64 bits overflows 64-bit indexing");
      if (!x.is_int()) fail(std::string(who) + ": " + what + " must be a tuple of ints");
      out.push_back(x.to_int());
    }
    return out;
  };
  const Value& off = value(a[1], who);
  if (!off.is_int() || off.to_int() < 0) fail(std::string(who) + ": invalid storage offset");
  const int64_t offset = off.to_int();
  const std::vector<int64_t> size = ints(a[2], "size"), stride = ints(a[3], "stride");
  const uint64_t available = uint64_t(storage.numel());
  auto dims = [&] { return "size " + tuple_str(size) + ", stride " + tuple_str(stride); };
  auto bad = [&](const std::string& why) { fail(std::string(who) + ": invalid tensor: " + why); };
  if (size.size() != stride.size())
    bad("size " + tuple_str(size) + " and stride " + tuple_str(stride) + " have different lengths");
  if (size.size() > kMaxDims) bad(std::to_string(size.size()) + " dimensions (at most 64)");
  for (size_t i = 0; i < size.size(); ++i)
    if (size[i] < 0 || stride[i] < 0) bad("negative size or stride in " + dims());
  unsigned __int128 numel = 1, last = uint64_t(offset);
  for (size_t i = 0; i < size.size(); ++i) {
    numel *= uint64_t(size[i]);
    if (size[i] > 0) last += (unsigned __int128)(uint64_t(size[i]) - 1) * uint64_t(stride[i]);
    if (numel > uint64_t(INT64_MAX)) bad(dims() + " and offset " + std::to_string(offset) + " overflows 64-bit indexing");
  }
  if (numel == 0 && uint64_t(offset) > available)
    bad("offset " + std::to_string(offset) + " is past a storage of " + std::to_string(available) + " elements");
  if (numel > 0 && last >= available) {  // (last < 64 * 2**63: a 128-bit count, printed in two parts)
    const uint64_t hi = uint64_t(last / 10000000000000000000ull), lo = uint64_t(last % 10000000000000000000ull);
    std::string digits = std::to_string(lo);
    if (hi) digits = std::to_string(hi) + std::string(19 - digits.size(), '0') + digits;
    bad(dims() + " and offset " + std::to_string(offset) + " reach element " + digits + " of a storage of " +
        std::to_string(available) + " elements");
  }
  if (numel > available && numel > kMaxViewNumel)
    bad("size " + tuple_str(size) + " addresses " + std::to_string(uint64_t(numel)) + " elements of a storage of " +
        std::to_string(available) + " (more than " + std::to_string(kMaxViewNumel) + ")");
  const uint64_t bytes = uint64_t(numel) * itemsize(storage.dtype());
  if (bytes > view_budget_)
    fail("the tensors' views address more than 64 times the file's size (tensor of " + dims() +
         "): a storage expanded by stride 0 or overlapping strides");
  view_budget_ -= bytes;
  charge(640, "tensors");
  Tensor t = as_strided(storage, size, stride, offset);
  if (v2) {
    if (a.size() < 6 || a.size() > 7) fail("_rebuild_tensor_v2: expected 6 or 7 arguments");
    const Value& rg = value(a[4], who);
    const Value& hooks = value(a[5], who);
    if (!rg.is_none() && rg.kind() != Value::Kind::Bool) fail("_rebuild_tensor_v2: requires_grad must be a bool");
    if (!(hooks.is_none() || (hooks.is_dict() && hooks.entries().empty())))
      fail("_rebuild_tensor_v2: tensors with backward hooks are not supported");
    if (a.size() == 7) {
      const Value& md = value(a[6], who);
      if (!(md.is_none() || (md.is_dict() && md.entries().empty())))
        fail("_rebuild_tensor_v2: tensor metadata is not supported");
    }
    if (rg.kind() == Value::Kind::Bool && rg.to_bool() && (is_floating_point(t.dtype()) || is_complex(t.dtype())))
      t.requires_grad_(true);
  }
  return t;
}

Item Unpickler::call(const Item& func, Parts args) {
  auto out = [](Value v) {
    Item it;
    it.v = std::move(v);
    return it;
  };
  auto arg = [&](size_t i) -> const Value& { return value(args[i], func.name.c_str()); };
  auto nargs = [&](size_t lo, size_t hi) {
    if (args.size() < lo || args.size() > hi)
      fail(func.name + ": expected " + std::to_string(lo) + (hi > lo ? "-" + std::to_string(hi) : "") +
           " arguments, got " + std::to_string(args.size()));
  };
  auto list_arg = [&](const char* who) -> const Value& {
    if (args.size() != 1 || (arg(0).kind() != Value::Kind::List && arg(0).kind() != Value::Kind::Tuple))
      fail(std::string(who) + " may only be rebuilt from one list");
    return arg(0);
  };
  switch (func.g) {
    case G::OrderedDict: {  // OrderedDict() or OrderedDict([(key, value), ...])
      nargs(0, 1);
      Value d = fresh(opt_.python ? Value::ordered_dict() : Value::dict());
      if (!args.empty()) {
        const Value& pairs = list_arg("OrderedDict()");
        charge(64 * pairs.items().size(), "OrderedDict entries");
        for (const Value& p : pairs.items()) {
          if (!(p.kind() == Value::Kind::Tuple || p.kind() == Value::Kind::List) || p.items().size() != 2)
            fail("OrderedDict() may only be rebuilt from (key, value) pairs");
          set_item(d, p.items()[0], p.items()[1], "OrderedDict()");
        }
      }
      return out(d);
    }
    case G::Set:
    case G::FrozenSet: {
      nargs(0, 1);
      Value s = fresh(Value::set());
      if (!args.empty()) {
        const Value& from = list_arg(func.g == G::Set ? "set()" : "frozenset()");
        charge(16 * from.items().size(), "set items");
        for (const Value& v : from.items()) add_to_set(s, v);
      }
      if (func.g == G::FrozenSet && opt_.python) return out(object("builtins.frozenset", {s}));
      return out(s);
    }
    case G::Encode: {  // protocol 2 spells bytes as _codecs.encode(str, 'latin1')
      nargs(2, 2);
      const Value& text = arg(0);
      const Value& enc = arg(1);
      if (!text.is_string() || !enc.is_string() || (enc.to_string() != "latin1" && enc.to_string() != "latin-1"))
        fail("_codecs.encode: only encode(str, 'latin1') is allowed");
      std::string bytes;
      const std::string& s = text.to_string();
      for (size_t i = 0; i < s.size(); ++i) {  // UTF-8 code points below 256 to one byte each
        const unsigned char c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) bytes.push_back(char(c));
        else if ((c == 0xc2 || c == 0xc3) && i + 1 < s.size()) bytes.push_back(char(((c & 0x03) << 6) | (s[++i] & 0x3f)));
        else fail("_codecs.encode: the text is not latin-1");
      }
      charge(40 + bytes.size(), "bytes");
      return out(Value::bytes(std::move(bytes)));
    }
    case G::Bytes:
      if (!args.empty()) fail("bytes() may only be rebuilt without arguments");
      return out(Value::bytes(std::string()));
    case G::Rebuild:
    case G::RebuildV2:
      return out(Value(rebuild_tensor(args, func.g == G::RebuildV2)));
    case G::Param:
    case G::ParamState: {
      nargs(3, func.g == G::Param ? 3 : 4);
      const Value& data = arg(0);
      const Value& rg = arg(1);
      const Value& hooks = arg(2);
      if (!data.is_tensor() || rg.kind() != Value::Kind::Bool) fail(func.name + ": expected (tensor, bool, hooks)");
      if (!(hooks.is_none() || (hooks.is_dict() && hooks.entries().empty())))
        fail(func.name + ": parameters with backward hooks are not supported");
      if (args.size() == 4) {
        const Value& state = arg(3);
        if (!(state.is_none() || (state.is_dict() && state.entries().empty())))
          fail(func.name + ": parameters with Python attributes are not supported");
      }
      Tensor t = data.to_tensor();
      if (opt_.python) return out(object("torch.nn.Parameter", {Value(t), rg}));
      if (is_floating_point(t.dtype()) || is_complex(t.dtype())) t.requires_grad_(rg.to_bool());
      return out(Value(t));
    }
    case G::Size: {
      nargs(0, 1);
      Value t = fresh(Value::tuple());
      if (!args.empty()) {
        const Value& dims = arg(0);
        if (!dims.is_sequence()) fail("torch.Size: expected a tuple of ints");
        charge(8 * dims.items().size(), "sizes");
        for (const Value& d : dims.items()) {
          if (!d.is_int()) fail("torch.Size: expected a tuple of ints");
          adopt(t, d);
          t.items().push_back(d);
        }
      }
      if (opt_.python) return out(object("torch.Size", {t}));
      return out(t);
    }
    case G::Device: {
      nargs(1, 2);
      if (!arg(0).is_string() || arg(0).to_string().size() > 64 ||
          (args.size() == 2 && !arg(1).is_int() && !arg(1).is_none()))
        fail("torch.device: expected a str and an optional int");
      if (opt_.python) {
        Value::Items a{arg(0)};
        if (args.size() == 2) a.push_back(arg(1));
        return out(object("torch.device", std::move(a)));
      }
      std::string d = arg(0).to_string();
      if (args.size() == 2 && arg(1).is_int()) d += ":" + std::to_string(arg(1).to_int());
      return out(Value(d));
    }
    case G::BuildList:
      nargs(1, 1);
      if (arg(0).kind() != Value::Kind::List) fail(func.name + ": expected a list");
      return out(arg(0));
    case G::RestoreTag:
      nargs(2, 2);
      return out(arg(0));
    case G::User: {  // run by the front end, which allowed it
      Value::Items a;
      for (size_t i = 0; i < args.size(); ++i) a.push_back(arg(i));
      Item it = out(object(func.name, std::move(a)));
      it.user = true;
      return it;
    }
    case G::StorageType:
    case G::Script: break;
  }
  fail(func.name + " cannot be called in a checkpoint");
}

Value Unpickler::load() {
  for (;;) {
    const unsigned char op = static_cast<unsigned char>(*take(1));
    switch (op) {
      case 0x80: {  // PROTO
        if (uint(1) > 5) fail("pickle protocol above 5");
        break;
      }
      case 0x95: take(8); break;  // FRAME: a hint only
      case '.': {  // STOP: the top of the stack, whatever lies below it (as Python's pickle)
        Item it = pop();
        return value(it, "the checkpoint's object");
      }
      case '(': marks_.push_back(stack_.size()); charge(64, "marks"); break;
      case '0':  // POP
        if (stack_.size() > floor()) stack_.pop_back();
        else pop_mark();
        break;
      case '1': pop_mark(); break;  // POP_MARK
      case '2': {                   // DUP
        Item it = top();
        charge_copy(it);
        stack_.push_back(std::move(it));
        break;
      }
      case 'N': push(Value()); break;
      case 0x88: push(Value(true)); break;
      case 0x89: push(Value(false)); break;
      case 'J': push(Value(int64_t(int32_t(uint32_t(uint(4)))))); break;
      case 'K': push(Value(int64_t(uint(1)))); break;
      case 'M': push(Value(int64_t(uint(2)))); break;
      case 0x8a:
      case 0x8b: {  // LONG1, LONG4: little-endian two's complement (longer than 8 bytes if sign-extended)
        const uint64_t n = uint(op == 0x8a ? 1 : 4);
        const auto* p = reinterpret_cast<const unsigned char*>(take(n));
        uint64_t v = 0;
        for (uint64_t i = std::min<uint64_t>(n, 8); i-- > 0;) v = (v << 8) | p[i];
        const bool negative = n && (p[n - 1] & 0x80);
        if (n && n < 8 && negative) v |= ~uint64_t(0) << (8 * n);  // sign-extend
        bool wide = n > 8 && bool(v >> 63) != negative;
        for (uint64_t i = 8; i < n; ++i) wide = wide || p[i] != (negative ? 0xff : 0x00);
        if (wide && opt_.python) {  // Python's ints have no width: its bytes, for the front end
          charge(n, "integers");
          push(object("builtins.int", {Value::bytes(std::string(reinterpret_cast<const char*>(p), n))}));
          break;
        }
        if (wide) fail("an integer wider than 64 bits (it overflows int64)");
        push(Value(int64_t(v)));
        break;
      }
      case 'I': {
        const std::string s = line();
        if (s == "00" || s == "01") push(Value(s == "01"));
        else push(Value(parse_int(s)));
        break;
      }
      case 'L': push(Value(parse_int(line()))); break;
      case 'G': {  // BINFLOAT: big-endian
        const auto* p = reinterpret_cast<const unsigned char*>(take(8));
        uint64_t bits = 0;
        for (int i = 0; i < 8; ++i) bits = (bits << 8) | p[i];
        double d;
        std::memcpy(&d, &bits, 8);
        push(Value(d));
        break;
      }
      case 'F': {
        const std::string s = line();
        char* end = nullptr;
        const double d = std::strtod(s.c_str(), &end);
        if (s.empty() || *end) fail("invalid float literal");
        push(Value(d));
        break;
      }
      case 'X': case 0x8c: case 0x8d:  // BINUNICODE, SHORT_BINUNICODE, BINUNICODE8
      case 'T': case 'U':              // BINSTRING, SHORT_BINSTRING
      case 'B': case 'C': case 0x8e:   // BINBYTES, SHORT_BINBYTES, BINBYTES8
      case 0x96: {                     // BYTEARRAY8
        const int w = (op == 0x8c || op == 'U' || op == 'C') ? 1 : (op == 0x8d || op == 0x8e || op == 0x96) ? 8 : 4;
        uint64_t n = uint(w);
        if (op == 'T' && int32_t(uint32_t(n)) < 0) fail("negative BINSTRING length");
        if (n > data_.size() - pos_)  // bounds first: a hostile length allocates nothing
          fail(std::string(op_name(op)) + " declares " + std::to_string(n) + " bytes but the pickle holds " +
               std::to_string(data_.size() - pos_));
        const char* p = take(n);
        charge(n, "strings");
        std::string text(p, n);
        if (op == 'B' || op == 'C' || op == 0x8e) push(Value::bytes(std::move(text)));
        else if (op == 0x96) push(opt_.python ? object("builtins.bytearray", {Value::bytes(std::move(text))})
                                              : Value::bytes(std::move(text)));
        else if (op == 'T' || op == 'U') push(byte_string(std::move(text)));
        else push(Value(std::move(text)));
        break;
      }
      case ']': push(fresh(Value::list())); break;
      case '}': push(fresh(Value::dict())); break;
      case ')': push(fresh(Value::tuple())); break;
      case 0x8f: push(fresh(Value::set())); break;
      case 'l': push(sequence(Value::Kind::List, pop_mark(), "LIST")); break;
      case 't': case 0x85: case 0x86: case 0x87: {  // TUPLE, TUPLE1-3
        Parts parts;
        if (op == 't') {
          parts = pop_mark();
        } else {
          const size_t n = size_t(op - 0x84);
          if (stack_.size() < floor() + n) fail("TUPLE" + std::to_string(n) + " needs " + std::to_string(n) + " values");
          parts.assign(std::make_move_iterator(stack_.end() - std::ptrdiff_t(n)), std::make_move_iterator(stack_.end()));
          stack_.resize(stack_.size() - n);
        }
        const bool plain = std::all_of(parts.begin(), parts.end(), [](const Item& i) { return i.k == Item::K::Value; });
        if (plain) {
          push(sequence(Value::Kind::Tuple, std::move(parts), "TUPLE"));
        } else {
          charge(64 * parts.size(), "tuples");
          Item it;
          it.k = Item::K::Parts;
          it.parts = std::make_shared<Parts>(std::move(parts));
          stack_.push_back(std::move(it));
        }
        break;
      }
      case 'd': {  // DICT
        Parts parts = pop_mark();
        if (parts.size() % 2) fail("DICT with an odd number of items");
        Value d = fresh(Value::dict());
        for (size_t i = 0; i < parts.size(); i += 2) set_item(d, value(parts[i], "DICT"), value(parts[i + 1], "DICT"), "DICT");
        push(d);
        break;
      }
      case 'a': case 'e': {  // APPEND, APPENDS
        Parts parts;
        if (op == 'a') parts.push_back(pop());
        else parts = pop_mark();
        Item& target = top();
        if (target.k != Item::K::Value || target.v.kind() != Value::Kind::List)
          fail(std::string(op == 'a' ? "APPEND" : "APPENDS") + " on a " + what_is(target) + " is not allowed");
        for (auto& p : parts) {
          const Value& v = value(p, "APPEND");
          adopt(target.v, v);
          target.v.items().push_back(v);
        }
        break;
      }
      case 's': case 'u': {  // SETITEM, SETITEMS
        Parts parts;
        if (op == 's') {
          Item v = pop(), k = pop();
          parts.push_back(std::move(k));
          parts.push_back(std::move(v));
        } else {
          parts = pop_mark();
        }
        if (parts.size() % 2) fail("SETITEMS with an odd number of items");
        Item& target = top();
        if (target.k != Item::K::Value || !target.v.is_dict() || target.object)
          fail(std::string(op == 's' ? "SETITEM" : "SETITEMS") + " on a " + what_is(target) + " is not allowed");
        for (size_t i = 0; i < parts.size(); i += 2)
          set_item(target.v, value(parts[i], "SETITEMS"), value(parts[i + 1], "SETITEMS"), "SETITEMS");
        break;
      }
      case 0x90: {  // ADDITEMS
        Parts parts = pop_mark();
        Item& target = top();
        if (target.k != Item::K::Value || target.v.kind() != Value::Kind::Set)
          fail("ADDITEMS on a " + what_is(target) + " is not allowed");
        if (meta(target.v).frozen) fail("ADDITEMS: a set is changed after it was placed in another");
        for (auto& p : parts) add_to_set(target.v, value(p, "ADDITEMS"));
        break;
      }
      case 0x91: {  // FROZENSET
        Parts parts = pop_mark();
        Value s = fresh(Value::set());
        for (auto& p : parts) add_to_set(s, value(p, "FROZENSET"));
        push(opt_.python ? object("builtins.frozenset", {s}) : s);
        break;
      }
      case 'p': case 'q': case 'r': case 0x94: {  // PUT, BINPUT, LONG_BINPUT, MEMOIZE
        uint64_t idx;
        if (op == 'p') {
          const std::string l = line();
          if (l.size() > 12) fail("PUT index is out of range");
          const int64_t i = parse_int(l);
          if (i < 0) fail("memo index " + l + " is out of range");
          idx = uint64_t(i);
        } else {
          idx = op == 'q' ? uint(1) : op == 'r' ? uint(4) : memo_.size();
        }
        if (idx > kMaxMemoIndex) fail("memo index " + std::to_string(idx) + " is out of range");
        const Item& it = top();
        charge_copy(it);
        charge(64, "memo entries");
        memo_[idx] = it;
        break;
      }
      case 'g': case 'h': case 'j': {  // GET, BINGET, LONG_BINGET
        uint64_t idx;
        if (op == 'g') {
          const std::string l = line();
          if (l.size() > 12) fail("GET index is out of range");
          idx = uint64_t(parse_int(l));
        } else {
          idx = op == 'h' ? uint(1) : uint(4);
        }
        auto it = memo_.find(idx);
        if (it == memo_.end()) fail("memo entry " + std::to_string(idx) + " is read before it is written");
        charge_copy(it->second);
        stack_.push_back(it->second);
        break;
      }
      case 'i': {  // INST: torch.save never writes it; the global is still named (and refused)
        std::string module = line();
        Item g = global(std::move(module), line());
        fail("building a " + g.name + " with INST/OBJ is not allowed");
      }
      case 'o':  // OBJ
        fail("building objects with INST/OBJ is not allowed");
      case 'S': {  // STRING (protocol 0): a quoted literal with backslash escapes
        const std::string l = line();
        if (l.size() < 2 || (l[0] != '\'' && l[0] != '"') || l.back() != l[0]) fail("STRING: not a quoted literal");
        std::string raw;
        for (size_t i = 1; i + 1 < l.size(); ++i) {
          if (l[i] != '\\') {
            raw += l[i];
            continue;
          }
          if (++i + 1 >= l.size()) fail("STRING: a dangling backslash");
          const char c = l[i];
          static const std::string plain = "\\'\"", from = "ntr", to = "\n\t\r";
          if (plain.find(c) != std::string::npos) {
            raw += c;
          } else if (c == 'n' || c == 't' || c == 'r') {
            raw += to[from.find(c)];
          } else if (c == 'x' && i + 2 < l.size() && std::isxdigit(static_cast<unsigned char>(l[i + 1])) &&
                     std::isxdigit(static_cast<unsigned char>(l[i + 2]))) {
            raw += char(std::stoi(l.substr(i + 1, 2), nullptr, 16));
            i += 2;
          } else {
            fail("STRING: unsupported escape");
          }
        }
        charge(raw.size(), "strings");
        push(byte_string(std::move(raw)));
        break;
      }
      case 'c': {  // GLOBAL
        std::string module = line();
        std::string name = line();
        stack_.push_back(global(std::move(module), name));
        break;
      }
      case 0x93: {  // STACK_GLOBAL
        Item name = pop(), module = pop();
        if (!name.v.is_string() || !module.v.is_string() || name.k != Item::K::Value || module.k != Item::K::Value)
          fail("STACK_GLOBAL needs two strings");
        stack_.push_back(global(module.v.to_string(), name.v.to_string()));
        break;
      }
      case 'R': {  // REDUCE
        Item args = pop();
        Item func = pop();
        if (func.k != Item::K::Global) fail("REDUCE on something that is not a global");
        Parts parts;
        if (args.k == Item::K::Parts) {
          parts = *args.parts;
        } else if (args.k == Item::K::Value && args.v.kind() == Value::Kind::Tuple) {
          for (const Value& v : args.v.items()) {
            Item i;
            i.v = v;
            parts.push_back(std::move(i));
          }
        } else {
          fail("REDUCE arguments must be a tuple");
        }
        charge_repeat(func, args, parts);
        stack_.push_back(call(func, std::move(parts)));
        break;
      }
      case 0x81:    // NEWOBJ: TorchScript's objects, filled by BUILD, and allowed classes
      case 0x92: {  // NEWOBJ_EX: allowed classes
        Item kwargs;
        if (op == 0x92) kwargs = pop();
        Item args = pop();
        Item cls = pop();
        const bool script = cls.k == Item::K::Global && cls.g == G::Script && op == 0x81;
        const bool user = cls.k == Item::K::Global && cls.g == G::User;
        const char* opname = op == 0x81 ? "NEWOBJ" : "NEWOBJ_EX";
        if (!(script || user) || args.k != Item::K::Value || args.v.kind() != Value::Kind::Tuple ||
            (script && !args.v.items().empty()) ||
            (op == 0x92 && (kwargs.k != Item::K::Value || !kwargs.v.is_dict())))
          fail(std::string(opname) + " of " + (cls.k == Item::K::Global ? cls.name : what_is(cls)) +
               ": only classes allowlisted with add_safe_globals" + (opt_.python ? "" : " and TorchScript objects") +
               " may be created this way");
        Item obj;
        if (script) {
          obj.v = fresh(Value::dict());
          obj.object = true;
          obj.name = cls.name;
        } else {
          obj.v = object(cls.name, args.v.items(), true);
          if (op == 0x92) {
            adopt(obj.v, kwargs.v);
            obj.v.object().kwargs = kwargs.v;
          }
          obj.user = true;
        }
        stack_.push_back(std::move(obj));
        break;
      }
      case 'b': {  // BUILD
        Item state = pop();
        Item& inst = top();
        const Value& s = value(state, "BUILD");
        if (inst.k == Item::K::Value && inst.object) {
          if (!s.is_dict()) fail("BUILD: the TorchScript object " + inst.name + " has a custom state (__setstate__)");
          if (!inst.v.entries().empty()) fail("BUILD: the TorchScript object " + inst.name + " is built twice");
          for (const auto& [k, v] : s.entries()) set_item(inst.v, k, v, "BUILD");
          inst.object = false;  // built: an ordinary dict from here on
          break;
        }
        if (inst.k == Item::K::Value && inst.user) {  // an allowed class: the front end sets the state
          Value::Object& o = inst.v.object();
          if (o.built) fail("BUILD: the " + o.type + " object is built twice");
          adopt(inst.v, s);
          o.state = s;
          o.built = true;
          break;
        }
        // torch's state dicts are OrderedDicts with a _metadata attribute (a dict of per-module
        // versions); nothing else may be set, so no later opcode can meet a substituted method.
        const bool metadata = s.is_dict() && s.entries().size() == 1 && s.entries()[0].first == Value("_metadata") &&
                              s.entries()[0].second.is_dict();
        if (inst.k == Item::K::Value && metadata && (opt_.python ? inst.v.is_ordered_dict() : inst.v.is_dict())) {
          if (opt_.python) {
            if (!inst.v.dict_metadata().is_none()) fail("BUILD: an OrderedDict's _metadata is set twice");
            adopt(inst.v, s.entries()[0].second);
            inst.v.set_dict_metadata(s.entries()[0].second);
          }
          break;
        }
        std::string keys = s.kind() == Value::Kind::Dict ? "[" : type_name(s);
        if (s.is_dict()) {
          for (size_t i = 0; i < s.entries().size() && i < 4; ++i) keys += (i ? ", " : "") + s.entries()[i].first.repr();
          keys += s.entries().size() > 4 ? ", ...]" : "]";
        }
        fail("BUILD (setting state " + keys + ") on a " + what_is(inst) +
             " is not allowed; only an OrderedDict's _metadata may be set");
      }
      case 'Q': {  // BINPERSID: ('storage', storage type, key, location, numel)
        Item pid = pop();
        if (pid.k != Item::K::Parts || pid.parts->size() != 5) fail("unexpected persistent id");
        const Parts& p = *pid.parts;
        if (p[0].k != Item::K::Value || p[0].v != Value("storage") || p[1].k != Item::K::Global ||
            p[1].g != G::StorageType || p[2].k != Item::K::Value || !p[2].v.is_string() || p[3].k != Item::K::Value ||
            !p[3].v.is_string() || p[4].k != Item::K::Value || !p[4].v.is_int() || p[4].v.to_int() < 0)
          fail("malformed storage id");
        Item st;
        st.k = Item::K::Storage;
        st.v = Value(storage_(p[2].v.to_string(), p[1].dtype, p[4].v.to_int(), p[3].v.to_string()));
        stack_.push_back(std::move(st));
        break;
      }
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("unsupported pickle opcode ") + hex + " at byte " + std::to_string(pos_ - 1) +
             " (checkpoints use only data opcodes)");
      }
    }
  }
}

}  // namespace

Value unpickle(std::string_view data, const std::string& name, uint64_t file_size, const StorageFn& storage,
               const ReadOptions& options) {
  return Unpickler(data, name, file_size, storage, options).load();
}

}  // namespace kindle::torch_pickle
