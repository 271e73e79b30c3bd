// Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (children named "0", "1", ... or by key, as in
// Python, so state-dict keys match: "0.weight", "layers.2.bias"). A child is given as a holder
// (nn::Linear(3, 4)), a shared pointer to a module, or a temporary module object (moved in).
#pragma once
#include <functional>

#include "kindle/nn/holder.h"
#include "kindle/nn/module.h"

namespace kindle::nn {

namespace detail {
template <typename T, typename = void>
struct is_holder : std::false_type {};
template <typename T>
struct is_holder<T, std::void_t<typename T::ContainedType>>
    : std::is_base_of<ModuleHolder<typename T::ContainedType>, T> {};
template <typename T, typename = void>
struct is_shared_module : std::false_type {};
template <typename T>
struct is_shared_module<T, std::void_t<typename T::element_type>>
    : std::bool_constant<std::is_base_of_v<Module, typename T::element_type> &&
                         std::is_convertible_v<T, std::shared_ptr<typename T::element_type>>> {};
// A holder, a shared pointer to a module, or a module.
template <typename T>
inline constexpr bool is_module_like_v =
    is_holder<T>::value || is_shared_module<T>::value || std::is_base_of_v<Module, T>;

// The module behind any module-like argument, shared and with its static type.
template <typename M>
auto shared_module(M&& m) {
  using T = std::decay_t<M>;
  if constexpr (is_holder<T>::value) {
    return m.ptr();
  } else if constexpr (is_shared_module<T>::value) {
    return std::shared_ptr<typename T::element_type>(m);
  } else {
    static_assert(std::is_base_of_v<Module, T>, "not a kindle::nn::Module, holder or shared pointer to one");
    static_assert(!std::is_lvalue_reference_v<M>,
                  "pass a holder (nn::Linear(3, 4)), a shared pointer or a temporary; modules are not copied");
    return std::make_shared<T>(std::move(m));
  }
}

// A container's child: the module, and its one-tensor forward as the module's own class spells
// it (a user module's `Tensor forward(Tensor x)` is not Module's virtual one).
struct AnyChild {
  Ptr<Module> module;
  std::function<Tensor(const Tensor&)> forward;
};
template <typename M>
AnyChild any_child(M&& m) {
  auto p = shared_module(std::forward<M>(m));
  using T = typename decltype(p)::element_type;
  AnyChild c{Ptr<Module>(p), nullptr};
  if constexpr (std::is_convertible_v<decltype(std::declval<T&>().forward(std::declval<const Tensor&>())), Tensor>) {
    T* raw = p.get();
    c.forward = [raw](const Tensor& x) -> Tensor { return raw->forward(x); };
  } else {
    Module* raw = p.get();
    c.forward = [raw](const Tensor& x) { return raw->forward(x); };
  }
  return c;
}
int64_t wrap_index(int64_t index, size_t size, const char* what);
// The module class of M: M itself, or the module a holder type shares (at<nn::Linear> is at<nn::LinearImpl>).
template <typename M, typename = void>
struct module_of {
  using type = M;
};
template <typename M>
struct module_of<M, std::void_t<typename M::ContainedType>> {
  using type = typename M::ContainedType;
};
template <typename M>
using module_of_t = typename module_of<M>::type;
}  // namespace detail

// A named child for Sequential({{"fc", nn::Linear(3, 4)}, {"act", nn::ReLU()}}).
struct NamedModule {
  template <typename M, typename = std::enable_if_t<detail::is_module_like_v<std::decay_t<M>>>>
  NamedModule(std::string name, M&& m) : name(std::move(name)), child(detail::any_child(std::forward<M>(m))) {}
  std::string name;
  detail::AnyChild child;
};

// Runs its children in order, each on the previous one's output:
//   nn::Sequential net(nn::Linear(784, 128), nn::ReLU(), nn::Linear(128, 10));
// C++ evaluates function arguments in an order the compiler chooses, so the layers may be built
// (and draw their initial weights) in any order; a braced list (net{...}) builds them left to
// right, as Python does.
class SequentialImpl : public Module {
 public:
  SequentialImpl() = default;
  template <typename... Ms, typename = std::enable_if_t<(sizeof...(Ms) > 0) &&
                                                        (detail::is_module_like_v<std::decay_t<Ms>> && ...) &&
                                                        !(std::is_same_v<std::decay_t<Ms>, SequentialImpl> || ...)>>
  explicit SequentialImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  explicit SequentialImpl(std::initializer_list<NamedModule> named);

  template <typename M>
  void push_back(M&& module) {
    push_back(std::to_string(children_.size()), std::forward<M>(module));
  }
  template <typename M>
  void push_back(const std::string& name, M&& module) {
    append(name, detail::any_child(std::forward<M>(module)));
  }
  // Appends every child of another Sequential (or anything iterable of modules).
  template <typename C>
  void extend(const C& container) {
    for (const auto& m : container) push_back(m);
  }

  // Calls every child's forward in turn; an empty Sequential returns its input.
  Tensor forward(const Tensor& input) override;
  size_t size() const { return children_.size(); }
  bool is_empty() const { return children_.empty(); }
  // Python's indexing: negative indices count from the end; IndexError out of range.
  Ptr<Module> operator[](int64_t index) const { return ptr(index); }
  Ptr<Module> ptr(int64_t index) const;
  // The child as its concrete class; TypeError if it is not one.
  template <typename M>
  std::shared_ptr<detail::module_of_t<M>> ptr(int64_t index) const {
    auto p = std::dynamic_pointer_cast<detail::module_of_t<M>>(ptr(index));
    KINDLE_CHECK_TYPE(p != nullptr, name(), "[", index, "] is a ", ptr(index)->name(), ", not the requested type");
    return p;
  }
  template <typename M>
  detail::module_of_t<M>& at(int64_t index) const {
    return *ptr<M>(index);
  }
  std::vector<Ptr<Module>> modules_in_order() const;
  auto begin() const { return Iter{children_.begin()}; }
  auto end() const { return Iter{children_.end()}; }

 private:
  void append(const std::string& name, detail::AnyChild child);
  struct Iter {  // iterates the children as Ptr<Module>
    std::vector<detail::AnyChild>::const_iterator it;
    const Ptr<Module>& operator*() const { return it->module; }
    Iter& operator++() { return ++it, *this; }
    bool operator!=(const Iter& o) const { return it != o.it; }
    bool operator==(const Iter& o) const { return it == o.it; }
  };
  std::vector<detail::AnyChild> children_;
};

class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder<SequentialImpl>() {}
  Sequential(std::initializer_list<NamedModule> named)
      : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>(named)) {}
};

// Holds modules in a list (their forward is up to the owner).
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() = default;
  template <typename... Ms, typename = std::enable_if_t<(sizeof...(Ms) > 0) &&
                                                        (detail::is_module_like_v<std::decay_t<Ms>> && ...) &&
                                                        !(std::is_same_v<std::decay_t<Ms>, ModuleListImpl> || ...)>>
  explicit ModuleListImpl(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }
  template <typename M>
  void push_back(M&& module) {
    Ptr<Module> p(detail::shared_module(std::forward<M>(module)));
    add_child(std::to_string(modules_.size()), p);
    modules_.push_back(p);
  }
  template <typename C>
  void extend(const C& container) {
    for (const auto& m : container) push_back(m);
  }
  size_t size() const { return modules_.size(); }
  bool is_empty() const { return modules_.empty(); }
  Ptr<Module> operator[](int64_t index) const { return ptr(index); }
  Ptr<Module> ptr(int64_t index) const;
  template <typename M>
  std::shared_ptr<detail::module_of_t<M>> ptr(int64_t index) const {
    auto p = std::dynamic_pointer_cast<detail::module_of_t<M>>(ptr(index));
    KINDLE_CHECK_TYPE(p != nullptr, name(), "[", index, "] is a ", ptr(index)->name(), ", not the requested type");
    return p;
  }
  template <typename M>
  detail::module_of_t<M>& at(int64_t index) const {
    return *ptr<M>(index);
  }
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  std::vector<Ptr<Module>> modules_;
};
KINDLE_MODULE(ModuleList);

// Holds modules by name, in insertion order.
class ModuleDictImpl : public Module {
 public:
  ModuleDictImpl() = default;
  explicit ModuleDictImpl(const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& modules) {
    for (const auto& [k, m] : modules) insert(k, m);
  }
  template <typename M>
  void insert(const std::string& key, M&& module) {
    Ptr<Module> p(detail::shared_module(std::forward<M>(module)));
    if (!own_children().contains(key)) order_.push_back(key);
    replace_or_add_child(key, p);
  }
  size_t size() const { return order_.size(); }
  bool empty() const { return order_.empty(); }
  bool contains(const std::string& key) const { return own_children().contains(key); }
  Ptr<Module> operator[](const std::string& key) const;  // KeyError when absent
  template <typename M>
  std::shared_ptr<detail::module_of_t<M>> at(const std::string& key) const {
    auto p = std::dynamic_pointer_cast<detail::module_of_t<M>>((*this)[key]);
    KINDLE_CHECK_TYPE(p != nullptr, name(), "['", key, "'] is a ", (*this)[key]->name(), ", not the requested type");
    return p;
  }
  std::vector<std::string> keys() const { return order_; }
  std::vector<Ptr<Module>> values() const;

 private:
  std::vector<std::string> order_;
};
KINDLE_MODULE(ModuleDict);

// Holds parameters in a list, named "0", "1", ... (state-dict keys "plist.0"). Each keeps its
// own requires_grad, as libtorch's. Iterating gives OrderedDict items (item.key(), item.value()).
class ParameterListImpl : public Module {
 public:
  ParameterListImpl() = default;
  template <typename... Ts, typename = std::enable_if_t<(sizeof...(Ts) > 0) &&
                                                        (std::is_convertible_v<const Ts&, const Tensor&> && ...)>>
  explicit ParameterListImpl(const Ts&... params) {
    (append(params), ...);
  }
  void append(const Tensor& param);
  void append(const OrderedDict<Tensor>::Item& item) { append(item.value()); }
  template <typename C>
  void extend(const C& container) {
    for (const auto& p : container) append(p);
  }
  Tensor& at(int64_t index);
  const Tensor& at(int64_t index) const { return const_cast<ParameterListImpl*>(this)->at(index); }
  Tensor& operator[](int64_t index) { return at(index); }
  const Tensor& operator[](int64_t index) const { return at(index); }
  size_t size() const noexcept { return own_parameters().size(); }
  bool is_empty() const noexcept { return own_parameters().empty(); }
  auto begin() const { return own_parameters().begin(); }
  auto end() const { return own_parameters().end(); }
  std::string extra_repr() const override;
};
KINDLE_MODULE(ParameterList);

// Holds parameters by name, in insertion order (libtorch's ParameterDict).
class ParameterDictImpl : public Module {
 public:
  ParameterDictImpl() = default;
  explicit ParameterDictImpl(const OrderedDict<Tensor>& params) {
    for (const auto& item : params) insert(item.key(), item.value());
  }
  // Adds or replaces `key`; the parameter keeps its own requires_grad.
  Tensor& insert(const std::string& key, const Tensor& param);
  // Removes and returns `key`; KeyError when absent.
  Tensor pop(const std::string& key);
  void update(const ParameterDictImpl& other) {
    for (const auto& item : other.own_parameters()) insert(item.key(), item.value());
  }
  void clear();
  bool contains(const std::string& key) const noexcept { return own_parameters().contains(key); }
  size_t size() const noexcept { return own_parameters().size(); }
  bool empty() const noexcept { return own_parameters().empty(); }
  std::vector<std::string> keys() const { return own_parameters().keys(); }
  std::vector<Tensor> values() const { return own_parameters().values(); }
  const Tensor& get(const std::string& key) const { return own_parameters().at(key); }
  Tensor& get(const std::string& key) { return own_parameter_at(key); }
  Tensor& operator[](const std::string& key) { return get(key); }
  const Tensor& operator[](const std::string& key) const { return get(key); }
  auto begin() const { return own_parameters().begin(); }
  auto end() const { return own_parameters().end(); }
  std::string extra_repr() const override;

 private:
  Tensor& own_parameter_at(const std::string& key);
};
KINDLE_MODULE(ParameterDict);

}  // namespace kindle::nn
