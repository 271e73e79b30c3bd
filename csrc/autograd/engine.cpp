// The backward pass: runs the graph from the roots in dependency order on the calling thread.
#include <algorithm>
#include <atomic>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "kindle/profiler.h"
#include "autograd/functions.h"
#include "kindle/operators.h"

namespace kindle::autograd {

namespace {

std::atomic<void (*)()> interrupt_check{nullptr};

bool is_expandable_to(IntArrayRef shape, IntArrayRef desired) {
  if (shape.size() > desired.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t s = shape[shape.size() - 1 - i], d = desired[desired.size() - 1 - i];
    if (s != d && s != 1) return false;
  }
  return true;
}

}  // namespace

// Sums a broadcast gradient back to `shape`.
Tensor sum_to(const Tensor& grad, IntArrayRef shape) {
  if (grad.sizes() == shape) return grad;
  int64_t lead = grad.dim() - int64_t(shape.size());
  DimVector dims;
  for (int64_t i = 0; i < lead; ++i) dims.push_back(i);
  for (int64_t i = 0; i < int64_t(shape.size()); ++i)
    if (shape[i] == 1 && grad.sizes()[lead + i] != 1) dims.push_back(lead + i);
  Tensor r = dims.empty() ? grad : grad.sum(IntArrayRef(dims), true);
  if (lead > 0 || r.sizes() != shape) r = r.reshape(shape);
  return r;
}

namespace {

// Checks one gradient produced by `fn` for its input i against what the next node expects,
// reducing broadcast gradients and casting dtypes.
Tensor validate_grad(const Node& fn, size_t i, Tensor grad, const OutputMeta& meta) {
  if (!grad.defined()) return grad;
  if (grad.sizes() != IntArrayRef(meta.sizes)) {
    if (!is_expandable_to(meta.sizes, grad.sizes())) {
      std::ostringstream os;
      os << "Function " << fn.name() << " returned an invalid gradient at index " << i << " - got " << grad.sizes()
         << " but expected shape compatible with " << IntArrayRef(meta.sizes);
      throw Error(os.str());
    }
    grad = sum_to(grad, meta.sizes);
  }
  if (grad.dtype() != meta.dtype) grad = grad.to(meta.dtype);
  return grad;
}

struct GraphTask {
  int64_t id = 0;  // torch._C._current_graph_task_id
  std::unordered_map<Node*, int> dependencies;
  std::unordered_map<Node*, tensor_list> buffers;
  // autograd.grad / backward(inputs=...): where the wanted gradients arrive
  std::unordered_map<Node*, std::vector<std::pair<uint32_t, size_t>>> captures;  // node -> (input_nr, slot)
  std::unordered_set<Node*> needed;  // empty: every node runs
  tensor_list captured;
  bool keep_graph = false;
  bool create_graph = false;
  std::vector<std::function<void()>> final_callbacks;  // queue_callback
};

// The backward pass running on this thread (queue_callback appends to it).
thread_local GraphTask* current_task = nullptr;

void accumulate(tensor_list& buf, size_t i, Tensor g) {
  if (!g.defined()) return;
  if (!buf[i].defined()) buf[i] = std::move(g);
  else buf[i] = buf[i] + g;
}

// Counts, for every node reachable from the roots, how many edges lead into it; and, when only
// some gradients are wanted, which nodes lie on a path to them.
void compute_dependencies(GraphTask& task, const std::vector<Edge>& roots, bool restrict,
                          const std::unordered_set<Node*>& targets, const std::unordered_set<Node*>& must_run) {
  std::vector<Node*> stack;
  std::unordered_set<Node*> seen;
  for (auto& e : roots) {
    if (!e.fn) continue;
    task.dependencies[e.fn.get()] += 1;  // the root's own gradient is one delivery
    if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
  }
  std::vector<Node*> order;  // DFS discovery order
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    order.push_back(n);
    for (auto& e : n->next_edges) {
      if (!e.fn) continue;
      task.dependencies[e.fn.get()] += 1;
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  if (!restrict) return;
  // A node runs only if a wanted gradient lies beyond it: a target itself does not run (its
  // incoming gradient is captured), unless it must (a leaf's accumulator in backward(inputs=)).
  // Iterate to a fixed point (a reverse topological pass would do; this stays simple).
  task.needed.insert(nullptr);  // marks the set as in use even when nothing runs
  for (Node* n : must_run) task.needed.insert(n);
  bool changed = true;
  while (changed) {
    changed = false;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* n = *it;
      if (task.needed.count(n)) continue;
      for (auto& e : n->next_edges)
        if (e.fn && (task.needed.count(e.fn.get()) || targets.count(e.fn.get()))) {
          task.needed.insert(n);
          changed = true;
          break;
        }
    }
  }
}

// The wanted gradients (autograd.grad's inputs) at `fn`, now complete: the tensors' own hooks
// apply to them (once: the gradient flowing on past `fn` is the hooked one too), as in PyTorch.
void capture(GraphTask& task, Node& fn, tensor_list& inputs) {
  if (auto* acc = dynamic_cast<AccumulateGrad*>(&fn)) {
    if (AutogradMeta* m = get_meta(acc->variable); m && inputs.size() == 1 && inputs[0].defined())
      for (auto& [id, hook] : m->leaf_hooks) inputs[0] = checked_hook_result(inputs[0], hook(inputs[0]), "a tensor");
  } else {
    for (auto& hook : fn.tensor_hooks) {
      if (hook.id == 0 || hook.output_nr >= inputs.size() || !inputs[hook.output_nr].defined()) continue;
      Tensor& g = inputs[hook.output_nr];
      g = checked_hook_result(g, hook.fn(g), ("an output of " + fn.name()).c_str());
    }
  }
  for (auto& [input_nr, slot] : task.captures[&fn])
    if (input_nr < inputs.size()) task.captured[slot] = inputs[input_nr];
}

// user_hooks_done: capture() already ran the tensor hooks other than retain_grad's.
tensor_list call_node(Node& fn, tensor_list&& inputs, bool user_hooks_done) {
  for (auto& hook : fn.tensor_hooks) {
    if (user_hooks_done && hook.id != 0) continue;
    Tensor& g = inputs[hook.output_nr];
    if (!g.defined()) continue;
    g = checked_hook_result(g, hook.fn(g), ("an output of " + fn.name()).c_str());
  }
  for (auto& hook : fn.pre_hooks) {
    tensor_list r = hook(inputs);
    if (!r.empty()) inputs = std::move(r);
  }
  tensor_list grad_outputs_copy;
  if (!fn.post_hooks.empty()) grad_outputs_copy = inputs;
  profiler::Scope scope(profiler::active() ? fn.name() : std::string(), profiler::EventKind::Backward);
  tensor_list outputs = fn.apply(std::move(inputs));
  for (auto& hook : fn.post_hooks) {
    tensor_list r = hook(outputs, grad_outputs_copy);
    if (!r.empty()) outputs = std::move(r);
  }
  return outputs;
}

void check_anomaly(const Node& fn, const tensor_list& outputs) {
  if (!AnomalyMode::is_enabled() || !AnomalyMode::check_nan()) return;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    if (o.defined() && o.is_floating_point() && isnan(o).any().item<bool>()) {
      std::ostringstream os;
      os << "Function '" << fn.name() << "' returned nan values in its " << i << "th output.";
      if (!fn.anomaly_trace.empty())
        os << "\nThe forward call that created it (anomaly mode traceback):\n" << fn.anomaly_trace;
      else
        os << " (Enable anomaly detection before the forward pass to see where it was created.)";
      throw Error(os.str());
    }
  }
}

void execute(GraphTask& task, const std::vector<Edge>& roots, tensor_list&& root_grads) {
  // Nodes run in order of readiness, latest-created first among the ready ones (as PyTorch).
  auto cmp = [](const std::shared_ptr<Node>& a, const std::shared_ptr<Node>& b) {
    return a->sequence_nr < b->sequence_nr;
  };
  std::priority_queue<std::shared_ptr<Node>, std::vector<std::shared_ptr<Node>>, decltype(cmp)> ready(cmp);
  auto deliver = [&](const Edge& e, Tensor g, bool& became_ready) {
    Node* n = e.fn.get();
    auto& buf = task.buffers[n];
    if (buf.empty()) buf.resize(n->num_outputs());
    if (e.input_nr < buf.size()) accumulate(buf, e.input_nr, std::move(g));
    became_ready = --task.dependencies[n] == 0;
  };
  for (size_t i = 0; i < roots.size(); ++i) {
    bool r = false;
    if (!roots[i].fn) continue;
    deliver(roots[i], std::move(root_grads[i]), r);
    if (r) ready.push(roots[i].fn);
  }
  void (*check)() = interrupt_check.load(std::memory_order_relaxed);
  for (uint32_t step = 0; !ready.empty(); ++step) {
    if (check && step % 64 == 63) check();
    std::shared_ptr<Node> fn = ready.top();
    ready.pop();
    tensor_list inputs = std::move(task.buffers[fn.get()]);
    task.buffers.erase(fn.get());
    const bool captures = task.captures.count(fn.get()) > 0;
    if (captures) capture(task, *fn, inputs);
    bool run = task.needed.empty() ? true : task.needed.count(fn.get()) > 0;
    if (!run) {
      // Not on a path to a wanted gradient: release its dependents without running it.
      for (auto& e : fn->next_edges) {
        if (!e.fn) continue;
        bool r = false;
        deliver(e, Tensor(), r);
        if (r) ready.push(e.fn);
      }
      continue;
    }
    bool any = false;
    for (auto& g : inputs) any = any || g.defined();
    tensor_list outputs;
    if (any) {
      outputs = call_node(*fn, std::move(inputs), captures);
      check_anomaly(*fn, outputs);
    } else {
      outputs.resize(fn->next_edges.size());
    }
    if (!task.keep_graph) fn->release_variables();
    KINDLE_CHECK(outputs.size() == fn->next_edges.size() || outputs.empty(), "internal error: ", fn->name(),
                 " returned ", outputs.size(), " gradients for ", fn->next_edges.size(), " inputs");
    for (size_t i = 0; i < fn->next_edges.size(); ++i) {
      const Edge& e = fn->next_edges[i];
      if (!e.fn) continue;
      Tensor g = i < outputs.size() ? validate_grad(*fn, i, std::move(outputs[i]), e.fn->output_meta[e.input_nr])
                                    : Tensor();
      bool r = false;
      deliver(e, std::move(g), r);
      if (r) ready.push(e.fn);
    }
  }
}

}  // namespace

void set_backward_interrupt_check(void (*check)()) { interrupt_check = check; }

void queue_callback(std::function<void()> callback) {
  KINDLE_CHECK(current_task, "queue_callback: final callbacks can only be installed during the backward pass.");
  current_task->final_callbacks.push_back(std::move(callback));
}

namespace {
std::atomic<int64_t> next_task_id{0};

// A root given as a tensor: its gradient edge and gradient (ones for a scalar root).
void tensor_root(const Tensor& t, Tensor g, size_t i, std::vector<Edge>& root_edges, tensor_list& root_grads) {
  KINDLE_CHECK(t.requires_grad(), "element ", i, " of tensors does not require grad and does not have a grad_fn");
  if (!g.defined()) {
    KINDLE_CHECK(t.numel() == 1, "grad can be implicitly created only for scalar outputs (got a tensor of shape ",
                 t.sizes(), "; pass gradient= with the same shape)");
    KINDLE_CHECK(!t.is_complex(), "grad can be implicitly created only for real scalar outputs but got ", t.dtype());
    g = ones_like(t);
  } else {
    KINDLE_CHECK(g.sizes() == t.sizes(), "Mismatch in shape: grad_output[", i, "] has a shape of ", g.sizes(),
                 " and output[", i, "] has a shape of ", t.sizes(), ".");
    KINDLE_CHECK(g.is_floating_point() || is_complex(g.dtype()), "backward: gradient ", i,
                 " must be a floating point or complex tensor, got ", g.dtype());
  }
  root_edges.push_back(gradient_edge(t));
  root_grads.push_back(std::move(g));
}

// What a shape in an error message says of an input: a tensor's shape, or the edge's node.
std::string describe_input(const std::vector<BackwardArg>& inputs, size_t i) {
  std::ostringstream os;
  if (inputs[i].tensor.defined()) os << "of shape " << inputs[i].tensor.sizes();
  else os << "the gradient edge of " << inputs[i].edge.fn->name();
  return os.str();
}
}  // namespace

int64_t current_graph_task_id() { return current_task ? current_task->id : -1; }

bool will_engine_execute_node(const Node* node) {
  KINDLE_CHECK(current_task, "_will_engine_execute_node should only be called during the backward pass");
  Node* n = const_cast<Node*>(node);
  if (!current_task->dependencies.count(n)) return false;
  return current_task->needed.empty() || current_task->needed.count(n) || current_task->captures.count(n);
}

tensor_list run_backward(const std::vector<BackwardArg>& roots, const tensor_list& grad_outputs, bool keep_graph,
                         bool create_graph, const std::vector<BackwardArg>& inputs, bool allow_unused,
                         bool accumulate_into_grad) {
  std::vector<Edge> root_edges;
  tensor_list root_grads;
  KINDLE_CHECK(grad_outputs.empty() || grad_outputs.size() == roots.size(), "backward: got ", roots.size(),
               " outputs and ", grad_outputs.size(), " gradients; expected one gradient per output");
  for (size_t i = 0; i < roots.size(); ++i) {
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (roots[i].tensor.defined()) {
      tensor_root(roots[i].tensor, std::move(g), i, root_edges, root_grads);
      continue;
    }
    const Edge& e = roots[i].edge;
    KINDLE_CHECK(e.valid() && e.input_nr < e.fn->output_meta.size(), "backward: output ", i,
                 " is not a valid gradient edge");
    const OutputMeta& meta = e.fn->output_meta[e.input_nr];
    if (!g.defined()) {
      int64_t n = 1;
      for (int64_t s : meta.sizes) n *= s;
      KINDLE_CHECK(n == 1, "grad can be implicitly created only for scalar outputs (the gradient edge of ",
                   e.fn->name(), " has shape ", IntArrayRef(meta.sizes), "; pass grad_outputs)");
      g = ones(meta.sizes, meta.dtype, meta.device);
    } else {
      KINDLE_CHECK(g.sizes() == IntArrayRef(meta.sizes), "Mismatch in shape: grad_output[", i, "] has a shape of ",
                   g.sizes(), " and output[", i, "] has a shape of ", IntArrayRef(meta.sizes), ".");
    }
    root_edges.push_back(e);
    root_grads.push_back(std::move(g));
  }
  GraphTask task;
  task.id = next_task_id.fetch_add(1, std::memory_order_relaxed);
  task.keep_graph = keep_graph;
  task.create_graph = create_graph;
  std::unordered_set<Node*> targets, must_run;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i].tensor;
    Edge e = inputs[i].edge;
    if (t.defined()) {
      KINDLE_CHECK(t.requires_grad(), "One of the differentiated Tensors (input ", i, ", of shape ", t.sizes(),
                   ") does not require grad");
      e = gradient_edge(t);
    } else {
      KINDLE_CHECK(e.valid(), "backward: input ", i, " is not a valid gradient edge");
      KINDLE_CHECK(!accumulate_into_grad, "backward: inputs= takes tensors, not gradient edges (input ", i,
                   "); use autograd.grad for a gradient edge");
    }
    targets.insert(e.fn.get());
    if (accumulate_into_grad && t.is_leaf()) must_run.insert(e.fn.get());  // its accumulator does the work
    else task.captures[e.fn.get()].emplace_back(e.input_nr, i);
  }
  task.captured.resize(inputs.size());
  compute_dependencies(task, root_edges, !inputs.empty(), targets, must_run);
  {
    AutoGradMode mode(create_graph);
    GraphTask* outer = current_task;
    current_task = &task;
    try {
      execute(task, root_edges, std::move(root_grads));
      // Callbacks queued by hooks (or by callbacks) run in order once every node has run.
      for (size_t i = 0; i < task.final_callbacks.size(); ++i) {
        auto callback = task.final_callbacks[i];  // it may queue more (the vector grows)
        callback();
      }
    } catch (...) {
      current_task = outer;
      throw;
    }
    current_task = outer;
  }
  if (accumulate_into_grad) {
    // backward(inputs=[non-leaf]): its gradient accumulates into its .grad, like a leaf's.
    for (size_t i = 0; i < inputs.size(); ++i) {
      Tensor g = task.captured[i];
      if (!g.defined()) continue;
      if (!create_graph) g = g.detach();
      Tensor cur = inputs[i].tensor.grad();
      inputs[i].tensor.set_grad(cur.defined() ? cur + g : (create_graph ? g : g.clone()));
    }
    return {};
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!task.captured[i].defined())
      KINDLE_CHECK(allow_unused, "One of the differentiated Tensors (input ", i, ", ", describe_input(inputs, i),
                   ") appears to not have been used in the graph. Set allow_unused=True if this is the desired "
                   "behavior.");
    else if (!create_graph)
      task.captured[i] = task.captured[i].detach();
  }
  return task.captured;
}

tensor_list run_backward(const tensor_list& roots, const tensor_list& grad_outputs, bool keep_graph,
                         bool create_graph, const tensor_list& inputs, bool allow_unused, bool accumulate_into_grad) {
  KINDLE_CHECK(grad_outputs.empty() || grad_outputs.size() == roots.size(), "backward: got ", roots.size(),
               " tensors and ", grad_outputs.size(), " gradients; expected one gradient per tensor");
  std::vector<BackwardArg> r(roots.begin(), roots.end()), in(inputs.begin(), inputs.end());
  return run_backward(r, grad_outputs, keep_graph, create_graph, in, allow_unused, accumulate_into_grad);
}

void backward(const tensor_list& tensors, const tensor_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const tensor_list& inputs) {
  run_backward(tensors, grad_tensors, retain_graph.value_or(create_graph), create_graph, inputs, true, true);
}

tensor_list grad(const tensor_list& outputs, const tensor_list& inputs, const tensor_list& grad_outputs,
                 std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  KINDLE_CHECK(!inputs.empty(), "grad requires at least one input tensor");
  return run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, inputs, allow_unused,
                      false);
}

}  // namespace kindle::autograd
