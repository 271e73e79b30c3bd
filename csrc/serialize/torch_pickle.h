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
// another, so no cycle can form, and the tree they expand to is bounded, so walking it is cheap).
// Anything else raises ValueError naming the file.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kindle/serialize.h"
#include "safetensors.h"

namespace kindle::torch_pickle {

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

// True when the bytes start as a zip archive does.
bool is_zip(const safetensors::Source& src);

// ---- the two halves (pickle_reader.cpp, pickle_writer.cpp)

constexpr int kMaxDepth = 100;  // nesting of containers, on save and on load (as kindle.save's)

// PyTorch's legacy storage class for a dtype ("FloatStorage"; nullptr where it has none), and back.
const char* storage_name(DType d);
std::optional<DType> storage_dtype(std::string_view name);

// A storage the pickle names: key, dtype, element count -> the flat tensor (checked by the caller).
using StorageFn = std::function<Tensor(const std::string& key, DType dtype, int64_t numel)>;
// The pickle `data` of a file of `file_size` bytes (budgets scale with it), named `name` in errors.
Value unpickle(std::string_view data, const std::string& name, uint64_t file_size, const StorageFn& storage);
// obj as torch.save's pickle; `storages` receives the contiguous tensors, storage key = index.
std::string pickle(const Value& obj, std::vector<Tensor>& storages);

}  // namespace kindle::torch_pickle
