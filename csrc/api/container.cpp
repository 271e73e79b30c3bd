// Sequential, ModuleList, ModuleDict.
#include "kindle/nn/container.h"

namespace kindle::nn {

int64_t detail::wrap_index(int64_t index, size_t size, const char* what) {
  int64_t n = int64_t(size);
  KINDLE_CHECK_INDEX(index >= -n && index < n, "index ", index, " is out of range");
  return index < 0 ? index + n : index;
}

Sequential::Sequential(std::initializer_list<ModuleArg> modules) {
  for (const ModuleArg& m : modules) push_back(m.ptr);
}

Sequential::Sequential(std::initializer_list<std::pair<std::string, Ptr<Module>>> named) {
  for (auto& [n, m] : named) push_back(n, m);
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (auto& m : modules_) x = m->forward(x);
  return x;
}

Ptr<Module> Sequential::operator[](int64_t index) const {
  return modules_[size_t(detail::wrap_index(index, modules_.size(), "Sequential"))];
}

Ptr<Module> ModuleList::operator[](int64_t index) const {
  return modules_[size_t(detail::wrap_index(index, modules_.size(), "ModuleList"))];
}

Ptr<Module> ModuleDict::operator[](const std::string& key) const {
  const Ptr<Module>* p = own_children().find(key);
  KINDLE_CHECK_AS(KeyError, p != nullptr, "'", key, "'");
  return *p;
}

}  // namespace kindle::nn
