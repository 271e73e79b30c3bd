// libtorch's torch::save / torch::load over Kindle's checkpoints (safetensors files that
// kindle.load reads in Python): a module's state dict, an optimizer's or scheduler's state, a
// tensor or a list of tensors.
//   kindle::save(model, "model.pt");  kindle::load(model, "model.pt");
#pragma once
#include <iosfwd>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kindle/archive.h"
#include "kindle/nn/module.h"
#include "kindle/optimizers.h"
#include "kindle/serialize.h"

namespace kindle {

inline void save(const nn::Module& module, const std::string& path) { module.save(path); }
inline void load(nn::Module& module, const std::string& path) { module.load(path); }
template <typename M>
void save(const nn::ModuleHolder<M>& module, const std::string& path) {
  module->save(path);
}
template <typename M>
void load(const nn::ModuleHolder<M>& module, const std::string& path) {
  module->load(path);
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  module->save(path);
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  module->load(path);
}
inline void save(const optim::Optimizer& optimizer, const std::string& path) { optimizer.save(path); }
inline void load(optim::Optimizer& optimizer, const std::string& path) { optimizer.load(path); }
inline void save(const optim::Optimizer& optimizer, std::ostream& stream) {
  serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.save_to(stream);
}
inline void load(optim::Optimizer& optimizer, std::istream& stream) {
  serialize::InputArchive archive;
  archive.load_from(stream);
  optimizer.load(archive);
}
inline void save(const optim::LRScheduler& scheduler, const std::string& path) { scheduler.save(path); }
inline void load(optim::LRScheduler& scheduler, const std::string& path) { scheduler.load(path); }
// To and from a stream (the same bytes as the file forms).
inline void save(const nn::Module& module, std::ostream& stream) {
  serialize::OutputArchive archive;
  module.save(archive);
  archive.save_to(stream);
}
inline void load(nn::Module& module, std::istream& stream) {
  serialize::InputArchive archive;
  archive.load_from(stream);
  module.load(archive);
}
// One tensor (stored under the key "0"), or a list ("0", "1", ...).
void save(const Tensor& tensor, const std::string& path);
void load(Tensor& tensor, const std::string& path);
void save(const std::vector<Tensor>& tensors, const std::string& path);
void load(std::vector<Tensor>& tensors, const std::string& path);

}  // namespace kindle

namespace kindle::serialize {
// libtorch's `archive << model` / `archive >> model` (holders, shared_ptrs and modules).
inline OutputArchive& operator<<(OutputArchive& archive, const nn::Module& module) {
  module.save(archive);
  return archive;
}
inline InputArchive& operator>>(InputArchive& archive, nn::Module& module) {
  module.load(archive);
  return archive;
}
template <typename M>
OutputArchive& operator<<(OutputArchive& archive, const nn::ModuleHolder<M>& module) {
  return archive << *module;
}
template <typename M>
InputArchive& operator>>(InputArchive& archive, const nn::ModuleHolder<M>& module) {
  return archive >> *module;
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
OutputArchive& operator<<(OutputArchive& archive, const std::shared_ptr<M>& module) {
  return archive << *module;
}
template <typename M, typename = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
InputArchive& operator>>(InputArchive& archive, const std::shared_ptr<M>& module) {
  return archive >> *module;
}
inline OutputArchive& operator<<(OutputArchive& archive, const optim::Optimizer& optimizer) {
  optimizer.save(archive);
  return archive;
}
inline InputArchive& operator>>(InputArchive& archive, optim::Optimizer& optimizer) {
  optimizer.load(archive);
  return archive;
}
}  // namespace kindle::serialize
