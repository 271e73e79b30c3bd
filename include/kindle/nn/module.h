// kindle::nn::Module: the base of every layer and model in the C++ front end (Python's
// kindle.nn.Module, with the same names, state-dict keys and error messages).
//
// Holder style, as libtorch. Every layer is a class XImpl (the module) and a holder X, a shared
// pointer to an XImpl that is built like the module and called like it (nn/holder.h):
//
//   struct NetImpl : nn::Module {
//     nn::Linear fc1{nullptr}, fc2{nullptr};
//     NetImpl() {
//       fc1 = register_module("fc1", nn::Linear(784, 128));
//       fc2 = register_module("fc2", nn::Linear(128, 10));
//     }
//     Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x))); }
//   };
//   KINDLE_MODULE(Net);                       // TORCH_MODULE in <torch/torch.h>
//   Net net;                                  // a new NetImpl, shared
//   optim::SGD opt(net->parameters(), optim::SGDOptions(0.1));
//
// register_module takes a holder, a std::shared_ptr to a module, or a temporary module object
// (moved into a new shared one). A module object itself is movable, never copied: copying would
// silently share parameter tensors (copying a holder shares the module, as it says). Members are
// registered in the order the constructor runs, so the layers draw their initial weights in that
// order; lists of layers in braces (nn::Sequential{...}) are built left to right, while C++
// evaluates function arguments in an order the compiler chooses.
//
// forward(const Tensor&) is the virtual entry point of Module::operator(). A holder calls the
// module's own forward with any arguments, and Sequential calls each child's own one-tensor
// forward (a user module may declare `Tensor forward(Tensor x)` without overriding). A module
// whose forward takes other arguments and is called directly adds KINDLE_MODULE_CALL, so that
// m(a, b) calls m.forward(a, b).
//
// Tensor members alias the registry: `weight` above and parameters()["weight"] are handles to the
// same tensor, and every operation that changes a parameter (load_state_dict, to(dtype)) changes
// it in place, so member handles and optimizers keep seeing the live tensor. Reassigning a member
// (weight = ...) does not update the registry: use replace_parameter for that.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "kindle/nn/holder.h"
#include "kindle/ops.h"
#include "kindle/ordered_dict.h"

namespace kindle::serialize {
class OutputArchive;
class InputArchive;
}  // namespace kindle::serialize

namespace kindle {

// A state dict: dotted names to tensors, in registration order (Python's OrderedDict).
using StateDict = OrderedDict<Tensor>;

namespace nn {

class Module;

// A shared module that forwards calls: fc(x) is fc->forward(x), with any arguments.
template <typename M>
class Ptr : public std::shared_ptr<M> {
 public:
  using std::shared_ptr<M>::shared_ptr;
  Ptr() = default;
  Ptr(std::shared_ptr<M> p) : std::shared_ptr<M>(std::move(p)) {}
  template <typename... A>
  decltype(auto) operator()(A&&... args) const {
    return this->get()->forward(std::forward<A>(args)...);
  }
};

// Builds a shared module: nn::make<nn::Linear>(3, 4).
template <typename M, typename... A>
Ptr<M> make(A&&... args) {
  return Ptr<M>(std::make_shared<M>(std::forward<A>(args)...));
}

// Inside a module class whose forward takes other arguments than one tensor: makes m(a, b, ...)
// call m.forward(a, b, ...) for every overload (Module's own operator() takes one tensor).
#define KINDLE_MODULE_CALL                                 \
  template <typename... A>                                 \
  decltype(auto) operator()(A&&... args) {                 \
    return this->forward(std::forward<A>(args)...);        \
  }

// What load_state_dict found (strict=false reports instead of raising).
struct IncompatibleKeys {
  std::vector<std::string> missing_keys, unexpected_keys;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // The single-input forward that Sequential and operator() call. Modules with other signatures
  // (losses, attention, recurrent layers) add overloads; the default raises NotImplementedError.
  virtual Tensor forward(const Tensor& input);
  Tensor operator()(const Tensor& input) { return forward(input); }

  // ---- registration (names: non-empty, no '.', not already taken; KeyError otherwise)
  // Registers `t` (a leaf) as a parameter and sets its requires_grad. An undefined tensor
  // registers a missing parameter (Python's None): skipped by iteration and state dicts.
  Tensor register_parameter(const std::string& name, Tensor t, bool requires_grad = true);
  // Non-persistent buffers are left out of state_dict().
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  template <typename M>
  Ptr<M> register_module(const std::string& name, Ptr<M> module) {
    static_assert(std::is_base_of_v<Module, M>, "register_module: not a kindle::nn::Module");
    add_child(name, module);
    return module;
  }
  template <typename M>
  Ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    return register_module(name, Ptr<M>(std::move(module)));
  }
  // A holder (nn::Linear(3, 4)): registers the module it shares and returns it, so that
  // `fc = register_module("fc", nn::Linear(3, 4));` fills a `nn::Linear fc{nullptr};` member.
  template <typename M>
  Ptr<M> register_module(const std::string& name, const ModuleHolder<M>& holder) {
    return register_module(name, Ptr<M>(holder.ptr()));
  }
  // Moves a temporary module into a new shared one: register_module("fc", nn::Linear(3, 4)).
  template <typename M, typename = std::enable_if_t<std::is_base_of_v<Module, std::decay_t<M>>>>
  Ptr<std::decay_t<M>> register_module(const std::string& name, M&& module) {
    static_assert(!std::is_lvalue_reference_v<M>,
                  "register_module: pass a temporary (nn::Linear(3, 4)) or an nn::Ptr; modules are not copied");
    return register_module(name, Ptr<std::decay_t<M>>(std::make_shared<std::decay_t<M>>(std::move(module))));
  }
  // Replaces a registered parameter/buffer/child of this module (same kind); KeyError if absent.
  void replace_parameter(const std::string& name, Tensor t);
  void replace_buffer(const std::string& name, Tensor t);

  // ---- iteration (recursive names are dotted: "encoder.layers.0.linear1.weight"; a tensor or
  // module reachable twice is listed once, as Python's remove_duplicate=True)
  std::vector<Tensor> parameters(bool recurse = true) const;
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  std::vector<Ptr<Module>> children() const;
  OrderedDict<Ptr<Module>> named_children() const;
  // This module (named "") and every descendant; pointers valid while this module lives.
  std::vector<Module*> modules();
  OrderedDict<Module*> named_modules(const std::string& prefix = "");
  // Own members only (not recursive), undefined (None) entries included.
  const OrderedDict<Tensor>& own_parameters() const { return parameters_; }
  const OrderedDict<Tensor>& own_buffers() const { return buffers_; }
  const OrderedDict<Ptr<Module>>& own_children() const { return children_; }
  // A descendant by dotted path ("encoder.layers.0"); AttributeError-like Error otherwise.
  Ptr<Module> get_submodule(const std::string& target) const;
  // This module as a `M` (nullptr when it is not one), as libtorch's Module::as.
  template <typename M>
  auto* as() {  // M* for a module class, M::ContainedType* for a holder (as<nn::Linear>())
    if constexpr (std::is_base_of_v<Module, M>) {
      return dynamic_cast<M*>(this);
    } else {
      return dynamic_cast<typename M::ContainedType*>(this);
    }
  }

  // ---- modes and conversion
  virtual void train(bool on = true);  // this module and every descendant
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // Floating-point parameters, their grads and floating buffers take `dtype`, in place: the
  // tensors keep their identity, so optimizers built before keep working. TypeError for a
  // non-floating dtype, as Python.
  void to(DType dtype);
  void to(Device device, bool non_blocking = false);  // only the CPU has kernels: RuntimeError otherwise
  void to(Device device, DType dtype, bool non_blocking = false) {
    to(device, non_blocking);
    to(dtype);
  }
  void zero_grad(bool set_to_none = true);
  void requires_grad_(bool requires_grad = true);
  // fn(module) for every descendant, children first, then this module (Python's apply).
  void apply(const std::function<void(Module&)>& fn);

  // ---- state
  // Parameters and persistent buffers, detached (they share memory with the module).
  StateDict state_dict() const;
  // Copies matching entries in place (a 1-element checkpoint fills a 0-d tensor). strict:
  // missing or unexpected keys raise; shape mismatches always raise, naming keys and shapes:
  // "Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: ...".
  IncompatibleKeys load_state_dict(const StateDict& state_dict, bool strict = true);
  // kindle::save(state_dict(), path) / load_state_dict(kindle::load(path)): the safetensors
  // files kindle.save writes in Python.
  void save(const std::string& path) const;
  void load(const std::string& path, bool strict = true);
  // libtorch's archive forms (kindle/archive.h): parameters and persistent buffers under their
  // state_dict names; load copies them in place and raises for a missing one.
  void save(serialize::OutputArchive& archive) const;
  void load(serialize::InputArchive& archive);

  // ---- printing
  // The class name without namespaces and without a trailing "Impl" ("Linear"); used in messages
  // and repr.
  virtual std::string name() const;
  // Python's extra_repr: the constructor arguments shown inside the parentheses.
  virtual std::string extra_repr() const { return ""; }
  // Python's repr: "Net(\n  (fc1): Linear(in_features=784, out_features=128, bias=True)\n)".
  std::string repr() const;
  // libtorch's spelling of repr: writes it to `stream`.
  virtual void pretty_print(std::ostream& stream) const;

 protected:
  void add_child(const std::string& name, Ptr<Module> module);
  void replace_or_add_child(const std::string& name, Ptr<Module> module);
  Tensor& own_parameter(const std::string& name) { return parameters_.at(name); }
  // Containers of parameters (ParameterDict) take them out again; false if absent.
  bool erase_parameter(const std::string& name) { return parameters_.erase(name); }

 private:
  void check_new_name(const std::string& name, const char* what) const;
  void load_recursive(const StateDict& sd, const std::string& prefix, std::vector<std::string>& missing,
                      std::vector<std::string>& unexpected, std::vector<std::string>& errors);
  template <typename F>
  void collect(const char* kind, bool recurse, F&& emit) const;

  OrderedDict<Tensor> parameters_;
  OrderedDict<Tensor> buffers_;
  std::set<std::string> non_persistent_;
  OrderedDict<Ptr<Module>> children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

}  // namespace nn
}  // namespace kindle
