// libtorch's torch::serialize::OutputArchive / InputArchive over Kindle's checkpoints: an archive
// is a flat dict of dotted keys ("fc1.weight", a nested archive's keys under its own key), saved
// as the safetensors state dict kindle.load reads in Python when every value is a tensor, or as
// a kindle.save object file when some are numbers or strings.
//
//   kindle::serialize::OutputArchive out;
//   model->save(out);                       // or out << model; out.write("epoch", IValue(3));
//   out.save_to("checkpoint.pt");
//   kindle::serialize::InputArchive in;
//   in.load_from("checkpoint.pt");
//   model->load(in);                        // copies in place, as libtorch does
#pragma once
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "kindle/device.h"
#include "kindle/ivalue.h"
#include "kindle/serialize.h"

namespace kindle::serialize {

class OutputArchive {
 public:
  // A tensor (detached; is_buffer is accepted for libtorch's signature and changes nothing).
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  // A bool, int, double, string or tensor.
  void write(const std::string& key, const IValue& value);
  // Every entry of `nested` under "key.".
  void write(const std::string& key, const OutputArchive& nested);
  // Any value of Kindle's object model (a nested dict or list too: an optimizer's state).
  void write_value(const std::string& key, Value value);
  void save_to(const std::string& filename) const;
  void save_to(std::ostream& stream) const;
  // The archive as Kindle's object model (a dict of key -> value).
  Value value() const;
  std::vector<std::string> keys() const;

 private:
  Value::Entries entries_;
  void put(const std::string& key, Value v);
};

class InputArchive {
 public:
  // Reads a checkpoint written by OutputArchive::save_to or kindle.save (a state dict or a dict
  // of values); tensors moved to `device` when given. A libtorch archive (a zip file) raises a
  // ValueError naming the format.
  void load_from(const std::string& filename, std::optional<Device> device = std::nullopt);
  void load_from(std::istream& stream, std::optional<Device> device = std::nullopt);
  // Into a defined tensor of the same shape: copied in place without recording autograd (the
  // module's parameter stays the same tensor); otherwise the tensor is replaced.
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false) const;
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false) const;
  bool try_read(const std::string& key, IValue& value) const;
  void read(const std::string& key, IValue& value) const;
  // The value under `key` as stored (nullptr when absent).
  const Value* try_read_value(const std::string& key) const { return find(key); }
  // The entries under "key." as an archive of their own.
  bool try_read(const std::string& key, InputArchive& nested) const;
  void read(const std::string& key, InputArchive& nested) const;
  std::vector<std::string> keys() const;

 private:
  Value::Entries entries_;
  const Value* find(const std::string& key) const;
  void set(const Value& loaded, std::optional<Device> device);
};

}  // namespace kindle::serialize
