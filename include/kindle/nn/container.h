// Containers: Sequential, ModuleList, ModuleDict (children named "0", "1", ... or by key, as in
// Python, so state-dict keys match: "0.weight", "layers.2.bias").
#pragma once
#include "kindle/nn/module.h"

namespace kindle::nn {

namespace detail {
// A module given by value (moved into a new shared module) or as a shared pointer.
template <typename M>
Ptr<Module> as_module_ptr(M&& m) {
  using T = std::decay_t<M>;
  if constexpr (std::is_base_of_v<Module, T>) {
    static_assert(!std::is_lvalue_reference_v<M>,
                  "pass a temporary module (nn::Linear(3, 4)) or an nn::Ptr; modules are not copied");
    return Ptr<Module>(std::make_shared<T>(std::move(m)));
  } else {
    static_assert(std::is_base_of_v<Module, typename T::element_type>, "not a kindle::nn::Module");
    return Ptr<Module>(m);
  }
}
int64_t wrap_index(int64_t index, size_t size, const char* what);
}  // namespace detail

namespace detail {
// A module type, or a shared pointer to one.
template <typename T, typename = void>
struct is_module_like : std::is_base_of<Module, T> {};
template <typename T>
struct is_module_like<T, std::void_t<typename T::element_type>> : std::is_base_of<Module, typename T::element_type> {};
}  // namespace detail

// One element of a braced module list: a temporary module (moved into a shared one) or a Ptr.
struct ModuleArg {
  template <typename M, typename = std::enable_if_t<detail::is_module_like<std::decay_t<M>>::value>>
  ModuleArg(M&& m) : ptr(detail::as_module_ptr(std::forward<M>(m))) {}
  Ptr<Module> ptr;
};

// Runs its children in order, each on the previous one's output:
//   nn::Sequential net{nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10)};
class Sequential : public Module {
 public:
  Sequential() = default;
  // nn::Sequential{nn::Linear(3, 4), nn::ReLU()}: a braced list, so the layers are built (and
  // draw their initial weights) left to right, as in Python; function arguments in parentheses
  // would be evaluated in an order the compiler chooses.
  Sequential(std::initializer_list<ModuleArg> modules);
  // Named children: nn::Sequential({{"fc", nn::make<nn::Linear>(3, 4)}, {"act", nn::make<nn::ReLU>()}}).
  explicit Sequential(std::initializer_list<std::pair<std::string, Ptr<Module>>> named);

  template <typename M>
  void push_back(M&& module) {
    push_back(std::to_string(modules_.size()), std::forward<M>(module));
  }
  template <typename M>
  void push_back(const std::string& name, M&& module) {
    Ptr<Module> p = detail::as_module_ptr(std::forward<M>(module));
    add_child(name, p);
    modules_.push_back(p);
  }

  // Calls every child's forward in turn; an empty Sequential returns its input.
  Tensor forward(const Tensor& input) override;
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  // Python's indexing: negative indices count from the end; IndexError out of range.
  Ptr<Module> operator[](int64_t index) const;
  // The child as its concrete type; TypeError if it is not one.
  template <typename M>
  Ptr<M> at(int64_t index) const {
    auto p = std::dynamic_pointer_cast<M>((*this)[index]);
    KINDLE_CHECK_TYPE(p != nullptr, name(), "[", index, "] is a ", (*this)[index]->name(), ", not the requested type");
    return Ptr<M>(p);
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<Ptr<Module>> modules_;
};

// Holds modules in a list (their forward is up to the owner).
class ModuleList : public Module {
 public:
  ModuleList() = default;
  // nn::ModuleList{nn::Linear(2, 2), nn::Linear(2, 3)} (built left to right).
  ModuleList(std::initializer_list<ModuleArg> modules) {
    for (const ModuleArg& m : modules) push_back(m.ptr);
  }
  template <typename M>
  void push_back(M&& module) {
    Ptr<Module> p = detail::as_module_ptr(std::forward<M>(module));
    add_child(std::to_string(modules_.size()), p);
    modules_.push_back(p);
  }
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  Ptr<Module> operator[](int64_t index) const;
  template <typename M>
  Ptr<M> at(int64_t index) const {
    auto p = std::dynamic_pointer_cast<M>((*this)[index]);
    KINDLE_CHECK_TYPE(p != nullptr, name(), "[", index, "] is a ", (*this)[index]->name(), ", not the requested type");
    return Ptr<M>(p);
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<Ptr<Module>> modules_;
};

// Holds modules by name, in insertion order.
class ModuleDict : public Module {
 public:
  ModuleDict() = default;
  template <typename M>
  void insert(const std::string& key, M&& module) {
    Ptr<Module> p = detail::as_module_ptr(std::forward<M>(module));
    add_child(key, p);
    order_.push_back(key);
  }
  size_t size() const { return order_.size(); }
  bool contains(const std::string& key) const { return named_children().contains(key); }
  Ptr<Module> operator[](const std::string& key) const;  // KeyError when absent
  std::vector<std::string> keys() const { return order_; }

 private:
  std::vector<std::string> order_;
};

}  // namespace kindle::nn
