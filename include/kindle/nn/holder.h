// Module holders, as libtorch has them. Every layer is a class `XImpl` (the module itself) and a
// holder `X`, a shared pointer to an XImpl that is built like the module and called like it:
//
//   nn::Linear fc(784, 128);          // a new LinearImpl, shared
//   nn::Linear none{nullptr};         // empty, to be assigned later (register_module)
//   Tensor y = fc(x);                 // fc->forward(x)
//   fc->weight;                       // the module's members
//
// Copying a holder shares the module (as copying a std::shared_ptr does); nothing is cloned. A
// user module does the same with KINDLE_MODULE(Net) after `struct NetImpl : nn::Module {...}`
// (TORCH_MODULE in the libtorch compatibility header).
#pragma once
#include <memory>
#include <ostream>
#include <type_traits>
#include <utility>

#include "kindle/error.h"

namespace kindle::nn {

namespace detail {
[[noreturn]] void throw_empty_holder(const char* contained);
}  // namespace detail

template <typename Contained>
class ModuleHolder {
 public:
  using ContainedType = Contained;

  // A new Contained(): only for modules with a default constructor (others start empty with
  // `{nullptr}`, as in libtorch).
  ModuleHolder() : impl_(default_construct()) {}
  ModuleHolder(std::nullptr_t) {}
  // A new Contained(args...).
  template <typename Head, typename... Tail,
            typename = std::enable_if_t<!(std::is_same_v<std::decay_t<Head>, std::nullptr_t> && sizeof...(Tail) == 0) &&
                                        !std::is_convertible_v<Head&&, std::shared_ptr<Contained>>>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(std::make_shared<Contained>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {}
  // Shares an existing module (what register_module returns).
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}

  explicit operator bool() const noexcept { return impl_ != nullptr; }
  bool is_empty() const noexcept { return impl_ == nullptr; }

  Contained* operator->() const { return get(); }
  Contained& operator*() const { return *get(); }
  Contained* get() const {
    if (!impl_) [[unlikely]] detail::throw_empty_holder(typeid(Contained).name());
    return impl_.get();
  }
  const std::shared_ptr<Contained>& ptr() const {
    if (!impl_) [[unlikely]] detail::throw_empty_holder(typeid(Contained).name());
    return impl_;
  }
  operator std::shared_ptr<Contained>() const { return impl_; }

  // Calls the module's forward with any arguments.
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) const {
    return get()->forward(std::forward<Args>(args)...);
  }
  // Indexes the module (Sequential, ModuleList, ModuleDict).
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) const {
    return (*get())[std::forward<Arg>(arg)];
  }

 protected:
  std::shared_ptr<Contained> impl_;

 private:
  static std::shared_ptr<Contained> default_construct() {
    if constexpr (std::is_default_constructible_v<Contained>) {
      return std::make_shared<Contained>();
    } else {
      static_assert(std::is_default_constructible_v<Contained>,
                    "this module has no default constructor: start its holder empty with `{nullptr}` "
                    "and assign it (register_module) later");
      return nullptr;
    }
  }
};

template <typename C>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<C>& holder) {
  return os << *holder;
}

}  // namespace kindle::nn

// Declares the holder `Name` of the module class `NameImpl`.
#define KINDLE_MODULE_IMPL(Name, ImplType)                          \
  class Name : public ::kindle::nn::ModuleHolder<ImplType> {        \
   public:                                                          \
    using ::kindle::nn::ModuleHolder<ImplType>::ModuleHolder;       \
    using Impl = ImplType;                                          \
  }
#define KINDLE_MODULE(Name) KINDLE_MODULE_IMPL(Name, Name##Impl)
