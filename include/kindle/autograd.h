// Reverse-mode automatic differentiation on the dynamic graph (DESIGN.md, Autograd).
//
// Every differentiable op run with grad mode on and an input that requires grad records a Node:
// its backward, with edges to the nodes that produced its inputs and the tensors it saved.
// `backward()` runs the graph in dependency order, accumulates into the leaves' `.grad` and
// frees the graph unless asked to keep it.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <unordered_map>

#include "kindle/ivalue.h"
#include "kindle/tensor.h"

namespace kindle::autograd {

struct Node;
using tensor_list = std::vector<Tensor>;

// Grad mode is per thread, as in PyTorch.
struct GradMode {
  // Whether ops record: the flag, and never inside inference mode (where torch's enable_grad sets
  // the flag but inference tensors still get no history).
  static bool is_enabled();
  static bool flag();  // what set_enabled set (torch.is_grad_enabled())
  static void set_enabled(bool enabled);
};

class AutoGradMode {
 public:
  explicit AutoGradMode(bool enabled) : prev_(GradMode::flag()) { GradMode::set_enabled(enabled); }
  ~AutoGradMode() { GradMode::set_enabled(prev_); }
  AutoGradMode(const AutoGradMode&) = delete;
  AutoGradMode& operator=(const AutoGradMode&) = delete;

 private:
  bool prev_;
};
// c10::InferenceMode: for its scope grad mode is off (on for InferenceMode(false)) and new
// storages are inference ones (see kindle/storage.h).
class InferenceMode {
 public:
  explicit InferenceMode(bool enabled = true) : grad_(!enabled), prev_(inference_mode_enabled()) {
    set_inference_mode_enabled(enabled);
  }
  ~InferenceMode() { set_inference_mode_enabled(prev_); }
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  static bool is_enabled() { return inference_mode_enabled(); }

 private:
  AutoGradMode grad_;
  bool prev_;
};
struct NoGradGuard : AutoGradMode {
  NoGradGuard() : AutoGradMode(false) {}
};
struct EnableGradGuard : AutoGradMode {
  EnableGradGuard() : AutoGradMode(true) {}
};

// Anomaly detection: nodes remember where they were created; a NaN produced in backward raises.
struct AnomalyMode {
  static bool is_enabled();
  static void set_enabled(bool enabled, bool check_nan = true);
  static bool check_nan();
  // Returns the caller's stack (the Python front end installs one that formats the Python stack).
  static void set_stack_provider(std::function<std::string()> provider);
  static std::string current_stack();
};

// Called by the engine every few nodes of a backward pass; raising from it ends the pass (the
// graph stays intact). The Python front end installs one that raises KeyboardInterrupt on Ctrl-C.
void set_backward_interrupt_check(void (*check)());

// The gradient of one forward output goes to `fn`'s input `input_nr`.
struct Edge {
  std::shared_ptr<Node> fn;
  uint32_t input_nr = 0;
  bool valid() const { return fn != nullptr; }
};

// What a gradient arriving for one forward output must look like: the engine reduces a
// broadcast gradient to this shape and casts it to this dtype; a missing one is zeros on `device`.
struct OutputMeta {
  DimVector sizes;
  DType dtype = kFloat32;
  Device device = kCPU;
};

// A tensor hook: gets the gradient; returns a replacement, or an undefined Tensor to keep it.
using TensorHook = std::function<Tensor(const Tensor&)>;
// A node hook after backward: (gradients for the inputs, gradients of the outputs).
using NodePostHook = std::function<tensor_list(const tensor_list&, const tensor_list&)>;
using NodePreHook = std::function<tensor_list(const tensor_list&)>;

class SavedVariable;
// The tensors a node saved under one name (torch's grad_fn._saved_<name>): one, or a list.
struct SavedVariableRef {
  std::vector<SavedVariable*> vars;
  bool is_list = false;
  bool found() const { return is_list || !vars.empty(); }
  static SavedVariableRef of(SavedVariable& v) { return {{&v}, false}; }
  template <typename V>  // std::vector<SavedVariable> (a template: SavedVariable is not complete here)
  static SavedVariableRef of(std::vector<V>& vs) {
    SavedVariableRef r{{}, true};
    for (auto& v : vs) r.vars.push_back(&v);
    return r;
  }
};

struct Node : std::enable_shared_from_this<Node> {
  Node();
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // grads: one per forward output (undefined where no gradient flowed); returns one gradient
  // per forward input (undefined where none is needed).
  virtual tensor_list apply(tensor_list&& grads) = 0;
  virtual std::string name() const = 0;
  // Frees what the node saved for backward; a later apply raises.
  virtual void release_variables() {}
  // Forward mode: output `output_nr` got `tangent` after the node saved it (a saved output is a
  // separate alias of the data, so it is told: backward formulas run under forward mode, as in
  // forward-over-reverse, must see the tangents of the values they read).
  virtual void on_output_tangent(uint32_t /*output_nr*/, const Tensor& /*tangent*/) {}
  // What the node saved under `name` (an input's name, or "result"); not found: none by that name.
  virtual SavedVariableRef saved_variable(std::string_view /*name*/) { return {}; }

  uint32_t num_outputs() const { return uint32_t(output_meta.size()); }
  bool needs_input_grad(size_t i) const { return i < next_edges.size() && next_edges[i].valid(); }
  // Registers the node's forward output `output_nr` (of `t`) and returns its index.
  uint32_t add_output(const Tensor& t);

  std::vector<Edge> next_edges;          // one per forward input
  std::vector<OutputMeta> output_meta;   // one per forward output
  uint64_t sequence_nr;                  // creation order; later nodes run first
  struct OutputHook {
    uint32_t output_nr;
    uint64_t id;
    TensorHook fn;
  };
  std::vector<OutputHook> tensor_hooks;  // hooks of non-leaf outputs, run before apply
  std::vector<NodePreHook> pre_hooks;
  std::vector<NodePostHook> post_hooks;
  std::string anomaly_trace;  // the creation stack, when anomaly mode was on
};

// Hooks for saved tensors (torch.autograd.graph.saved_tensors_hooks): while a maker is installed
// on this thread, every tensor saved for backward goes to a fresh SavedTensorHooks' pack, which
// keeps what it likes (a copy elsewhere, a file, a recipe to recompute it); the saved variable
// keeps only that, and backward asks unpack for the tensor back.
struct SavedTensorHooks {
  virtual ~SavedTensorHooks() = default;
  virtual void pack(const Tensor& t) = 0;
  virtual Tensor unpack() = 0;
};
using SavedTensorHooksMaker = std::function<std::unique_ptr<SavedTensorHooks>()>;
// Innermost installed pair wins. Pushing while disabled raises the disabling message.
void push_saved_tensors_hooks(SavedTensorHooksMaker maker);
void pop_saved_tensors_hooks();
// While disabled (torch.autograd.graph.disable_saved_tensors_hooks), installing hooks raises
// `message`; returns the previous message (empty: enabled).
std::string set_saved_tensors_hooks_disabled(std::string message);
struct SavedTensorsHooksGuard {
  explicit SavedTensorsHooksGuard(SavedTensorHooksMaker maker) { push_saved_tensors_hooks(std::move(maker)); }
  ~SavedTensorsHooksGuard() { pop_saved_tensors_hooks(); }
  SavedTensorsHooksGuard(const SavedTensorsHooksGuard&) = delete;
  SavedTensorsHooksGuard& operator=(const SavedTensorsHooksGuard&) = delete;
};

// A tensor saved for backward: remembers its version so that a later in-place change is caught.
// An op's own output is saved without its grad_fn (which is the saving node: a cycle) and
// re-attached when unpacked.
class SavedVariable {
 public:
  SavedVariable() = default;
  SavedVariable(const Tensor& t, bool is_output);
  Tensor unpack(const Node* owner) const;
  void reset();
  void set_tangent(const Tensor& tangent);  // of a saved output (see Node::on_output_tangent)
  bool defined() const { return defined_; }
  // Replaces what was saved by what `hooks` packs of it (grad_fn._raw_saved_x.register_hooks).
  void register_hooks(std::unique_ptr<SavedTensorHooks> hooks);

 private:
  void pack_with(std::unique_ptr<SavedTensorHooks> hooks, const Tensor& t);
  Tensor data_;
  std::shared_ptr<SavedTensorHooks> hooks_;  // set: data_ is empty and unpack asks the hooks
  Edge edge_;                                // with hooks: the history of a saved input
  uint64_t storage_uid_ = 0;                 // with hooks: which storage was saved
  uint32_t version_ = 0;
  uint32_t output_nr_ = 0;
  bool is_output_ = false;
  bool defined_ = false;
  bool released_ = false;
  bool requires_grad_ = false;
  std::weak_ptr<Node> weak_fn_;  // the saving node, for outputs
};

// The gradient edge of a tensor: its grad_fn, or the accumulator of a leaf that requires grad.
Edge gradient_edge(const Tensor& t);
// Makes `t` an output of `fn` (output number `output_nr`): sets grad_fn and requires_grad.
void set_history(const Tensor& t, const std::shared_ptr<Node>& fn, uint32_t output_nr);
std::vector<Edge> collect_edges(std::initializer_list<const Tensor*> inputs);

// Runs the backward pass. roots: the outputs; grad_outputs: their gradients (undefined: a
// scalar root gets 1). With `inputs` empty, gradients accumulate into every leaf's `.grad`;
// otherwise only into `inputs` (backward) or are returned (grad, accumulate=false).
tensor_list run_backward(const tensor_list& roots, const tensor_list& grad_outputs, bool keep_graph,
                         bool create_graph, const tensor_list& inputs, bool allow_unused, bool accumulate);

// An output or input of a backward pass: a tensor, or a gradient edge of the graph
// (torch.autograd.graph.GradientEdge: the gradient flowing into `edge.fn`'s output `input_nr`).
struct BackwardArg {
  Tensor tensor;  // undefined: use `edge`
  Edge edge;
  BackwardArg(Tensor t) : tensor(std::move(t)) {}  // NOLINT: a tensor is the common case
  BackwardArg(Edge e) : edge(std::move(e)) {}      // NOLINT
};
tensor_list run_backward(const std::vector<BackwardArg>& roots, const tensor_list& grad_outputs, bool keep_graph,
                         bool create_graph, const std::vector<BackwardArg>& inputs, bool allow_unused,
                         bool accumulate);
// During a backward pass: its id (-1 outside one), and whether `node` will run in it (a node that
// is not reached, or lies on no path to the wanted gradients, will not).
int64_t current_graph_task_id();
bool will_engine_execute_node(const Node* node);

void backward(const tensor_list& tensors, const tensor_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const tensor_list& inputs = {});
tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs = {},
                 std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                 bool allow_unused = false);

// Runs `hook(t)` each time a gradient has been accumulated into leaf `t`'s .grad (torch's
// register_post_accumulate_grad_hook); DistributedDataParallel starts its communication here.
uint64_t register_post_accumulate_grad_hook(const Tensor& t, std::function<void(const Tensor&)> hook);
void remove_post_accumulate_grad_hook(const Tensor& t, uint64_t id);
// Runs `callback` once the backward pass now running has finished (RuntimeError outside one).
void queue_callback(std::function<void()> callback);

// ---- C++ custom functions (the equivalent of Python's autograd.Function) ----

// Which inputs need a gradient: ctx.needs_input_grad[i] (Kindle) or ctx->needs_input_grad(i)
// (libtorch), over the tensor inputs in order.
struct NeedsInputGrad : std::vector<bool> {
  using std::vector<bool>::vector;
  using std::vector<bool>::operator=;
  bool operator()(size_t i) const { return i < size() && (*this)[i]; }
};

struct FunctionCtx {
  void save_for_backward(tensor_list tensors);
  tensor_list saved_tensors() const;  // checks that none was modified in place since
  tensor_list get_saved_variables() const { return saved_tensors(); }
  void mark_non_differentiable(const tensor_list& outputs);
  void mark_dirty(const tensor_list& inputs);
  void set_materialize_grads(bool value) { materialize_grads = value; }
  NeedsInputGrad needs_input_grad;
  bool materialize_grads = true;  // missing output gradients arrive as zeros (else undefined)
  // free-form state for backward, as libtorch's ctx->saved_data["k"] = 2.0; ....toDouble()
  std::unordered_map<std::string, IValue> saved_data;
  std::vector<Scalar> saved_scalars;
  std::vector<DimVector> saved_sizes;
  // internals
  tensor_list to_save_, non_differentiable_, dirty_;
  std::vector<SavedVariable> saved_;
  std::weak_ptr<Node> node_;  // weak: the node owns the ctx
};
using AutogradContext = FunctionCtx;
using Variable = Tensor;
using variable_list = tensor_list;

// Wires outputs computed (without grad) from inputs to a node that calls `backward_fn`.
// Used by Function<T>::apply and by the Python front end's autograd.Function.
tensor_list wrap_outputs(const std::string& name, const tensor_list& inputs, tensor_list outputs,
                         std::shared_ptr<FunctionCtx> ctx,
                         std::function<tensor_list(FunctionCtx&, tensor_list)> backward_fn);

// The demangled name of a custom function's class.
std::string custom_function_name(const char* mangled);
// libtorch's backward returns one gradient per forward argument; `tensor_arg` marks the
// arguments that were tensors. Returns the gradients of the tensor arguments, in order.
tensor_list custom_function_gradients(const std::string& name, tensor_list grads, const std::vector<bool>& tensor_arg);

// A user-defined differentiable function, written as libtorch writes one:
//   struct MulConstant : Function<MulConstant> {
//     static Tensor forward(AutogradContext* ctx, Tensor x, double c) {
//       ctx->saved_data["c"] = c;
//       return x * c;
//     }
//     static variable_list backward(AutogradContext* ctx, variable_list grads) {
//       return {grads[0] * ctx->saved_data["c"].toDouble(), Tensor()};  // one per forward argument
//     }
//   };
//   Tensor y = MulConstant::apply(x, 2.0);
// or in Kindle's older form, forward(FunctionCtx&, ...) and backward(FunctionCtx&, grads) with one
// gradient per tensor argument. forward may return a Tensor or a variable_list; apply returns
// the same.
template <typename Derived>
struct Function {
  template <typename... Args>
  static auto apply(Args&&... args) {
    auto ctx = std::make_shared<FunctionCtx>();
    tensor_list inputs;
    std::vector<bool> tensor_arg;
    (collect(inputs, tensor_arg, args), ...);
    for (auto& t : inputs) ctx->needs_input_grad.push_back(t.defined() && t.requires_grad());
    constexpr bool libtorch_style = requires { Derived::forward(ctx.get(), std::forward<Args>(args)...); };
    auto run_forward = [&] {
      NoGradGuard g;
      if constexpr (libtorch_style) {
        return Derived::forward(ctx.get(), std::forward<Args>(args)...);
      } else {
        return Derived::forward(*ctx, std::forward<Args>(args)...);
      }
    };
    auto out = run_forward();
    constexpr bool single = std::is_convertible_v<decltype(out), Tensor>;
    tensor_list outs;
    if constexpr (single) {
      outs.push_back(out);
    } else {
      outs = tensor_list(out.begin(), out.end());
    }
    std::string name = custom_function_name(typeid(Derived).name());
    std::function<tensor_list(FunctionCtx&, tensor_list)> bw;
    if constexpr (libtorch_style) {
      bw = [name, tensor_arg](FunctionCtx& c, tensor_list g) {
        return custom_function_gradients(name, Derived::backward(&c, std::move(g)), tensor_arg);
      };
    } else {
      bw = [](FunctionCtx& c, tensor_list g) { return Derived::backward(c, std::move(g)); };
    }
    outs = wrap_outputs(name, inputs, std::move(outs), ctx, std::move(bw));
    if constexpr (single) {
      return outs[0];
    } else {
      return outs;
    }
  }

 private:
  static void collect(tensor_list& v, std::vector<bool>& is_tensor, const Tensor& t) {
    v.push_back(t);
    is_tensor.push_back(true);
  }
  template <typename T>
  static void collect(tensor_list&, std::vector<bool>& is_tensor, const T&) {
    is_tensor.push_back(false);
  }
};

// ---- Forward-mode AD (dual tensors), as torch.autograd.forward_ad ----
//   int64_t level = forward_ad::enter_dual_level();
//   Tensor x = forward_ad::make_dual(primal, tangent);
//   Tensor y = f(x);
//   Tensor jvp = forward_ad::unpack_dual(y).second;
//   forward_ad::exit_dual_level(level);   // drops every tangent of the level
// One level exists at a time, as in PyTorch.
namespace forward_ad {
int64_t enter_dual_level();
void exit_dual_level(int64_t level = -1);
int64_t current_level();  // -1: none
Tensor make_dual(const Tensor& primal, const Tensor& tangent, int64_t level = -1);
// (a view of the primal without the tangent, the tangent or an undefined tensor)
std::pair<Tensor, Tensor> unpack_dual(const Tensor& t, int64_t level = -1);
// True when t carries a tangent that ops must propagate (a fused kernel without a forward formula
// then takes its op-by-op path).
bool is_dual(const Tensor& t);
// RAII form of enter/exit.
class DualLevel {
 public:
  DualLevel() : level_(enter_dual_level()) {}
  ~DualLevel() { exit_dual_level(level_); }
  DualLevel(const DualLevel&) = delete;
  DualLevel& operator=(const DualLevel&) = delete;
  int64_t level() const { return level_; }

 private:
  int64_t level_;
};
}  // namespace forward_ad

}  // namespace kindle::autograd

namespace kindle {
// libtorch's names at the top level: kindle::NoGradGuard.
using autograd::AutoGradMode;
using autograd::EnableGradGuard;
using autograd::InferenceMode;
using autograd::NoGradGuard;
}  // namespace kindle
