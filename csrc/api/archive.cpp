// torch::serialize::OutputArchive / InputArchive (kindle/archive.h) over kindle::save's files.
#include "kindle/archive.h"

#include <istream>
#include <iterator>
#include <ostream>

#include "kindle/autograd.h"
#include "kindle/error.h"
#include "kindle/ops.h"

namespace kindle::serialize {
namespace {

Value to_value(const IValue& v, const std::string& key) {
  if (v.isNone()) return Value();
  if (v.isBool()) return Value(v.toBool());
  if (v.isInt()) return Value(v.toInt());
  if (v.isDouble()) return Value(v.toDouble());
  if (v.isString()) return Value(v.toStringRef());
  if (v.isTensor()) return Value(v.toTensor().detach());
  KINDLE_CHECK_TYPE(false, "OutputArchive.write: '", key, "': only None, bool, int, double, string and tensor values "
                    "can be archived");
  return Value();
}

bool all_tensors(const Value::Entries& entries) {
  for (const auto& [k, v] : entries)
    if (!v.is_tensor()) return false;
  return true;
}

}  // namespace

void OutputArchive::put(const std::string& key, Value v) {
  KINDLE_CHECK_VALUE(!key.empty(), "OutputArchive.write: empty key");
  for (auto& [k, old] : entries_)
    if (k.to_string() == key) {
      old = std::move(v);
      return;
    }
  entries_.emplace_back(Value(key), std::move(v));
}

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool) {
  KINDLE_CHECK_VALUE(tensor.defined(), "OutputArchive.write: tensor '", key, "' is undefined");
  put(key, Value(tensor.detach()));
}

void OutputArchive::write(const std::string& key, const IValue& value) { put(key, to_value(value, key)); }

void OutputArchive::write_value(const std::string& key, Value value) { put(key, std::move(value)); }

void OutputArchive::write(const std::string& key, const OutputArchive& nested) {
  for (const auto& [k, v] : nested.entries_) put(key + "." + k.to_string(), v);
}

// A dict of tensors only is saved as a plain state dict: Python's kindle.load (and safetensors'
// own readers) see exactly a module's state_dict.
Value OutputArchive::value() const { return Value::dict(entries_); }

void OutputArchive::save_to(const std::string& filename) const {
  if (all_tensors(entries_)) {
    StateDict sd;
    for (const auto& [k, v] : entries_) sd.insert(k.to_string(), v.to_tensor());
    kindle::save(sd, filename);
  } else {
    kindle::save(value(), filename);
  }
}

void OutputArchive::save_to(std::ostream& stream) const {
  const std::string bytes = save_to_bytes(value());
  stream.write(bytes.data(), std::streamsize(bytes.size()));
  KINDLE_CHECK(stream.good(), "OutputArchive.save_to: writing ", bytes.size(), " bytes to the stream failed");
}

std::vector<std::string> OutputArchive::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries_) out.push_back(k.to_string());
  return out;
}

void InputArchive::set(const Value& loaded, std::optional<Device> device) {
  KINDLE_CHECK_VALUE(loaded.is_dict(), "InputArchive.load_from: expected a checkpoint holding a dict (a state dict or "
                     "an OutputArchive), got ", value_kind_name(loaded.kind()));
  entries_.clear();
  for (const auto& [k, v] : loaded.entries("checkpoint")) {
    KINDLE_CHECK_VALUE(k.is_string(), "InputArchive.load_from: expected string keys, got ", k.repr());
    Value item = v;
    if (device && item.is_tensor()) item = Value(item.to_tensor().to(*device));
    entries_.emplace_back(k, std::move(item));
  }
}

namespace {
// A TorchScript module archive (libtorch's own torch::save) nests its submodules as objects: an
// archive sees their tensors under dotted keys, as OutputArchive writes nested archives.
Value archive_value(detail::Checkpoint c) {
  if (!c.torchscript || !c.value.is_dict()) return std::move(c.value);
  return Value::from_state_dict(detail::module_tensors(c.value));
}
}  // namespace

void InputArchive::load_from(const std::string& filename, std::optional<Device> device) {
  set(archive_value(detail::load_checkpoint(filename)), device);
}

void InputArchive::load_from(std::istream& stream, std::optional<Device> device) {
  std::string bytes((std::istreambuf_iterator<char>(stream)), std::istreambuf_iterator<char>());
  set(archive_value(detail::load_checkpoint_bytes(bytes, "<stream>")), device);
}

const Value* InputArchive::find(const std::string& key) const {
  for (const auto& [k, v] : entries_)
    if (k.to_string() == key) return &v;
  return nullptr;
}

bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool) const {
  const Value* v = find(key);
  if (!v) return false;
  KINDLE_CHECK_TYPE(v->is_tensor(), "InputArchive.read: '", key, "' holds a ", value_kind_name(v->kind()),
                    ", not a tensor");
  const Tensor& t = v->to_tensor();
  if (tensor.defined() && tensor.sizes() == t.sizes()) {
    NoGradGuard no_grad;
    tensor.copy_(t);
  } else {
    const bool requires_grad = tensor.defined() && tensor.requires_grad();
    tensor = t.clone();
    if (requires_grad) tensor.requires_grad_(true);
  }
  return true;
}

void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) const {
  KINDLE_CHECK_VALUE(try_read(key, tensor, is_buffer), "InputArchive.read: no tensor under the key '", key,
                     "' (the archive has ", entries_.size(), " entries)");
}

bool InputArchive::try_read(const std::string& key, IValue& value) const {
  const Value* v = find(key);
  if (!v) return false;
  switch (v->kind()) {
    case Value::Kind::None: value = IValue(); break;
    case Value::Kind::Bool: value = IValue(v->to_bool()); break;
    case Value::Kind::Int: value = IValue(v->to_int()); break;
    case Value::Kind::Double: value = IValue(v->to_double()); break;
    case Value::Kind::String: value = IValue(v->to_string()); break;
    case Value::Kind::Tensor: value = IValue(v->to_tensor()); break;
    default:
      KINDLE_CHECK_TYPE(false, "InputArchive.read: '", key, "' holds a ", value_kind_name(v->kind()),
                        ", which IValue does not represent");
  }
  return true;
}

void InputArchive::read(const std::string& key, IValue& value) const {
  KINDLE_CHECK_VALUE(try_read(key, value), "InputArchive.read: no value under the key '", key, "'");
}

bool InputArchive::try_read(const std::string& key, InputArchive& nested) const {
  const std::string prefix = key + ".";
  Value::Entries sub;
  for (const auto& [k, v] : entries_) {
    const std::string& name = k.to_string();
    if (name.size() > prefix.size() && name.compare(0, prefix.size(), prefix) == 0)
      sub.emplace_back(Value(name.substr(prefix.size())), v);
  }
  if (sub.empty()) return false;
  nested.entries_ = std::move(sub);
  return true;
}

void InputArchive::read(const std::string& key, InputArchive& nested) const {
  KINDLE_CHECK_VALUE(try_read(key, nested), "InputArchive.read: no archive under the key '", key, "'");
}

std::vector<std::string> InputArchive::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : entries_) out.push_back(k.to_string());
  return out;
}

}  // namespace kindle::serialize
