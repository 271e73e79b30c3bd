// kindle::save / kindle::load: checkpoints in the safetensors format. The file format (header,
// validation, atomic write) has one implementation below both front ends (csrc/serialize/), so a
// model or optimizer saved in C++ loads with kindle.load in Python and the reverse.
//
// A flat name -> tensor map (a module's state_dict) is a plain safetensors file: an 8-byte
// little-endian header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__":
// {"format": "pt"}}, padded with spaces to 8 bytes, then the tensors' bytes (widest dtypes
// first). Nested structures (an optimizer's state dict) are described by a "kindle" metadata
// entry naming the tensors they hold; kindle::Value is that structure in C++.
//
// Writes to a path are atomic (temporary file in the same folder, fsync, rename). Reads validate
// the whole header before allocating anything: header length, JSON, dtypes, shapes, offsets
// tiling the data exactly; a hostile or truncated file raises ValueError naming the file, and a
// file that cannot be opened kindle::OSError.
#pragma once
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kindle/ordered_dict.h"
#include "kindle/tensor.h"

namespace kindle {

using StateDict = OrderedDict<Tensor>;

// A value of the object model kindle.save stores: None, bool, int, float, str, bytes, Tensor,
// dtype, list, tuple, set, dict (plain or ordered) with str or int keys (Python's types, spelled in
// C++), and Object: a Python object a checkpoint describes that C++ does not build (see below).
class Value {
 public:
  enum class Kind { None, Bool, Int, Double, String, Tensor, DType, List, Tuple, Set, Dict, Bytes, Object };
  using Items = std::vector<Value>;
  using Entries = std::vector<std::pair<Value, Value>>;  // keys: String or Int
  struct Object;

  Value() = default;
  Value(std::nullptr_t) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(int64_t(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(Tensor t) : v_(std::move(t)) {}
  Value(DType d) : v_(d) {}
  static Value list(Items items = {}) { return Value(Kind::List, std::move(items)); }
  static Value tuple(Items items = {}) { return Value(Kind::Tuple, std::move(items)); }
  static Value set(Items items = {}) { return Value(Kind::Set, std::move(items)); }
  static Value dict(Entries entries = {});
  // collections.OrderedDict, what torch's state dicts are; it may carry torch's `_metadata`.
  static Value ordered_dict(Entries entries = {});
  static Value bytes(std::string data);
  // A Python object by the global that makes it ("torch.Size", a class given to add_safe_globals):
  // type(*args) or, by_new, type.__new__(type, *args); BUILD's state, if any, is set afterwards.
  static Value object(std::string type, Items args, bool by_new = false);
  // A dict of str -> Tensor (a state dict).
  static Value from_state_dict(const StateDict& sd);

  Kind kind() const;
  bool is_none() const { return kind() == Kind::None; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_double() const { return kind() == Kind::Double; }
  bool is_number() const { return is_int() || is_double(); }
  bool is_string() const { return kind() == Kind::String; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_dict() const { return kind() == Kind::Dict; }
  bool is_sequence() const { return kind() == Kind::List || kind() == Kind::Tuple || kind() == Kind::Set; }
  bool is_ordered_dict() const;

  // Accessors raise TypeError naming `what` and the actual kind on a mismatch.
  bool to_bool(const char* what = "value") const;
  int64_t to_int(const char* what = "value") const;
  double to_double(const char* what = "value") const;  // ints convert
  const std::string& to_string(const char* what = "value") const;
  const Tensor& to_tensor(const char* what = "value") const;
  DType to_dtype(const char* what = "value") const;
  const Items& items(const char* what = "value") const;  // list, tuple or set
  Items& items(const char* what = "value");
  const Entries& entries(const char* what = "value") const;  // dict
  Entries& entries(const char* what = "value");
  const std::string& to_bytes(const char* what = "value") const;
  const Object& object(const char* what = "value") const;
  Object& object(const char* what = "value");
  // An OrderedDict's `_metadata` attribute (per-module versions in a state dict): None when unset.
  const Value& dict_metadata() const;
  void set_dict_metadata(Value metadata);
  // Dict lookup by str or int key: nullptr when absent.
  const Value* get(const Value& key) const;
  const Value& at(const Value& key, const char* what = "value") const;  // KeyError when absent
  void set_item(const Value& key, Value value);  // dict: insert or replace (keeps position)
  // A dict of str -> Tensor; TypeError otherwise.
  StateDict to_state_dict(const char* what = "value") const;

  friend bool operator==(const Value& a, const Value& b);  // tensors compare by identity
  std::string repr() const;  // Python-like, for messages

 private:
  struct Seq {
    Kind kind;
    Items items;
  };
  struct Map;
  struct Bytes {
    std::string data;
  };
  Value(Kind k, Items items) : v_(std::make_shared<Seq>(Seq{k, std::move(items)})) {}
  std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, DType, std::shared_ptr<Seq>,
               std::shared_ptr<Map>, Bytes, std::shared_ptr<Object>>
      v_;
};

struct Value::Object {
  std::string type;  // the global's path, "module.qualname"
  Items args;
  Value kwargs;  // NEWOBJ_EX's keyword arguments (a dict), or None
  Value state;   // what BUILD set, or None
  bool by_new = false;
  bool built = false;  // BUILD ran
};

const char* value_kind_name(Value::Kind k);

// The two checkpoint formats: Kindle's safetensors files (the default) and PyTorch's zip archive
// (what torch.save writes and torch.load reads: a pickle of the object and one entry per tensor).
enum class CheckpointFormat { safetensors, torch };

// Saves a flat map of tensors as a plain safetensors file (tensors are written contiguous and
// come back as independent tensors). The path is replaced atomically.
void save(const StateDict& tensors, const std::string& path);
// Any Value: a dict of str -> tensors not requiring grad is written flat, anything else with the
// "kindle" metadata tree (what Python's kindle.save does with the same object).
// CheckpointFormat::torch writes PyTorch's zip archive instead (torch.load in Python reads it;
// each tensor becomes its own storage).
void save(const Value& obj, const std::string& path, CheckpointFormat format = CheckpointFormat::safetensors);
// Reads a state dict: a flat safetensors file, a torch.save archive of a dict of tensors, or a
// TorchScript module archive (libtorch's torch::save of a module, torch.jit.save), whose modules'
// tensors come back under dotted names ("fc.weight"). TypeError for anything else.
StateDict load(const std::string& path);
// Reads any checkpoint: files kindle.save wrote in either format, torch.save archives (holding
// tensors, containers and plain values: nothing in a file is run, see csrc/serialize/torch_pickle.h)
// and TorchScript archives, whose objects (modules) come back as dicts of their attributes. Tensors
// are loaded on the CPU whatever device they were saved from.
Value load_value(const std::string& path);

// The same, to and from bytes in memory.
std::string save_to_bytes(const Value& obj, CheckpointFormat format = CheckpointFormat::safetensors);
Value load_from_bytes(const std::string& bytes, const std::string& name = "<bytes>");

namespace detail {
// A loaded checkpoint and whether it was a TorchScript archive (its objects are modules).
struct Checkpoint {
  Value value;
  bool torchscript = false;
};
Checkpoint load_checkpoint(const std::string& path);
Checkpoint load_checkpoint_bytes(const std::string& bytes, const std::string& name);
// The tensors of a TorchScript module's attribute dicts, under dotted names.
StateDict module_tensors(const Value& module);
}  // namespace detail

}  // namespace kindle
