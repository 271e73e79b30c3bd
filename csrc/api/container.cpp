// Sequential, ModuleList, ModuleDict.
#include "kindle/nn/container.h"

namespace kindle::nn {

int64_t detail::wrap_index(int64_t index, size_t size, const char* what) {
  int64_t n = int64_t(size);
  KINDLE_CHECK_INDEX(index >= -n && index < n, what, ": index ", index, " is out of range for ", n, " modules");
  return index < 0 ? index + n : index;
}

SequentialImpl::SequentialImpl(std::initializer_list<NamedModule> named) {
  for (const NamedModule& m : named) append(m.name, m.child);
}

void SequentialImpl::append(const std::string& name, detail::AnyChild child) {
  add_child(name, child.module);
  children_.push_back(std::move(child));
}

Tensor SequentialImpl::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& c : children_) x = c.forward(x);
  return x;
}

Ptr<Module> SequentialImpl::ptr(int64_t index) const {
  return children_[size_t(detail::wrap_index(index, children_.size(), "Sequential"))].module;
}

std::vector<Ptr<Module>> SequentialImpl::modules_in_order() const {
  std::vector<Ptr<Module>> out;
  for (const auto& c : children_) out.push_back(c.module);
  return out;
}

Ptr<Module> ModuleListImpl::ptr(int64_t index) const {
  return modules_[size_t(detail::wrap_index(index, modules_.size(), "ModuleList"))];
}

Ptr<Module> ModuleDictImpl::operator[](const std::string& key) const {
  const Ptr<Module>* p = own_children().find(key);
  KINDLE_CHECK_AS(KeyError, p != nullptr, "'", key, "'");
  return *p;
}

std::vector<Ptr<Module>> ModuleDictImpl::values() const {
  std::vector<Ptr<Module>> out;
  for (const auto& k : order_) out.push_back((*this)[k]);
  return out;
}

}  // namespace kindle::nn
