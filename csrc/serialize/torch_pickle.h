// PyTorch's checkpoint archive (what torch.save writes and TorchScript's module archives, e.g.
// libtorch's torch::save), read and written as a kindle::Value, for both front ends.
//
// The archive is a zip (zip.h) holding <prefix>/data.pkl, a pickle of the object, and one entry
// <prefix>/data/<key> per storage. In the pickle a tensor is torch._utils._rebuild_tensor_v2 on a
// persistent storage id ('storage', torch.FloatStorage, key, location, numel).
//
// Reading never runs code from the file: globals resolve only from a fixed table (the tensor and
// parameter rebuilders, OrderedDict, set, frozenset, torch.Size, torch.device, dtypes, storage
// types, and TorchScript's own list/type-tag helpers); a TorchScript object (a `__torch__.*`
// class, such as a scripted module) becomes the dict of its attributes. Everything is checked
// against the file before it is allocated: storages against their entries' sizes and together
// against the file's size, every tensor's geometry against its storage, and what the pickle builds
// against a budget linear in its size (containers nest at most 100 deep, are frozen once placed in
// another, so no cycle can form, and the tree they expand to is bounded, so walking it is cheap;
// rebuilding from one memoized value again and again is charged to a budget of the file's size;
// dict keys cost hashing work in proportion to their size). Anything else raises ValueError naming
// the file. Python's kindle.load runs this same reader (ReadOptions::python), so the rules are one.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kindle/serialize.h"
#include "safetensors.h"

namespace kindle::torch_pickle {

// How a front end reads the pickle. C++ (the defaults) gets the checkpoint object model of
// serialize.h; Python (kindle.load) asks for Python's own types, and may allow more globals.
struct ReadOptions {
  // Python's types as they are: OrderedDict (with torch's _metadata) apart from dict; torch.Size,
  // torch.device, nn.Parameter, frozenset and bytearray as Value::Object; dict keys and set items
  // may also be None, bool, float, bytes, dtypes, tuples and frozensets of those (Python's hash
  // guard sees them when it builds the dicts). TorchScript's own globals are C++'s only.
  bool python = false;
  // add_safe_globals: whether a global "module.qualname" outside the fixed table may be named; its
  // calls (REDUCE, NEWOBJ) and BUILD states become Value::Object for the front end to run.
  std::function<bool(const std::string& global)> allowed;
  // Called for a refused global before the ValueError is thrown, so a front end can raise its
  // own error (Python: pickle.UnpicklingError with torch's advice); `hint` may be empty.
  std::function<void(const std::string& global, const std::string& hint)> refused;
  // Protocol 2's byte strings (BINSTRING): "" keeps the bytes as a str (C++), or as Python's
  // Unpickler(encoding=): "ASCII", "latin1", "utf-8" or "bytes".
  std::string encoding;
  // What the pickle may build: about memory_factor x the file's size + memory_slack bytes.
  uint64_t memory_factor = 64, memory_slack = uint64_t(1) << 20;
};

// A torch.save archive opened and checked: its pickle and its storages, each read at most once and
// checked against its entry and, together, against the file's size.
class Archive {
 public:
  explicit Archive(const safetensors::Source& src);  // ValueError for what is no torch.save archive
  const std::string& pickle() const { return pickle_; }
  bool script() const { return script_; }  // a TorchScript archive (it has code/ or constants.pkl)
  // The storage `key` as a flat tensor of `numel` elements of `dtype`.
  Tensor storage(const std::string& key, DType dtype, int64_t numel);
  const std::string& name() const { return name_; }
  uint64_t size() const { return size_; }

 private:
  std::shared_ptr<const void> zip_;  // the zip::Reader (zip.h stays out of this header)
  std::string name_, prefix_, pickle_;
  uint64_t size_ = 0, budget_ = 0;  // budget: storage bytes that may still be allocated
  bool script_ = false;
  std::unordered_map<std::string, Tensor> storages_;
};

struct Loaded {
  Value value;
  bool script = false;  // a TorchScript archive (it has code/ or constants.pkl entries)
};

// Reads an archive from `src` (whose first bytes are a zip's).
Loaded read_archive(const safetensors::Source& src);

// Writes `obj` as torch.save does (protocol 2, storages 64-byte aligned under archive/): each
// tensor is written contiguous as its own storage (a tensor reached twice is written once).
// TypeError for a dtype PyTorch's format has no storage for, ValueError for containers nested
// deeper than 100.
void write_archive(const Value& obj, const safetensors::Sink& sink);
// The layout around a pickle already made (Python pickles whole objects): data.pkl, the format
// records, and storage k (contiguous) as archive/data/<k>.
void write_archive(const std::string& data_pkl, const std::vector<Tensor>& storages, const safetensors::Sink& sink);

// True when the bytes start as a zip archive does.
bool is_zip(const safetensors::Source& src);

// ---- the two halves (pickle_reader.cpp, pickle_writer.cpp)

constexpr int kMaxDepth = 100;  // nesting of containers, on save and on load (as kindle.save's)

// Each byte as the code point of that value, in UTF-8 (what protocol 2 makes of bytes).
std::string latin1_to_utf8(std::string_view bytes);

// PyTorch's legacy storage class for a dtype ("FloatStorage"; nullptr where it has none), and back.
const char* storage_name(DType d);
std::optional<DType> storage_dtype(std::string_view name);

// A storage the pickle names: key, dtype, element count, location ("cpu") -> the flat tensor
// (checked by the caller).
using StorageFn =
    std::function<Tensor(const std::string& key, DType dtype, int64_t numel, const std::string& location)>;
// The pickle `data` of a file of `file_size` bytes (budgets scale with it), named `name` in errors.
Value unpickle(std::string_view data, const std::string& name, uint64_t file_size, const StorageFn& storage,
               const ReadOptions& options = {});
// obj as torch.save's pickle; `storages` receives the contiguous tensors, storage key = index.
std::string pickle(const Value& obj, std::vector<Tensor>& storages);

}  // namespace kindle::torch_pickle
