// nn::Module: registries, recursive iteration, modes, dtype conversion and state dicts, with
// Python's names and messages (python/kindle/nn/modules/module.py).
#include "kindle/nn/module.h"
#include "kindle/archive.h"

#include <cxxabi.h>

#include <cstdlib>
#include <sstream>
#include <unordered_set>

#include "kindle/autograd.h"
#include "kindle/serialize.h"

namespace kindle::nn {

namespace {

// "kindle.Size([3, 4])", as Python prints a shape.
std::string size_str(IntArrayRef s) {
  std::ostringstream os;
  os << "kindle.Size(" << s << ")";
  return os.str();
}

std::string add_indent(const std::string& s, int spaces) {
  std::string out;
  size_t start = 0;
  bool first = true;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!first) out += "\n" + std::string(spaces, ' ');
    out += line;
    first = false;
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
}

std::string join_prefix(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

}  // namespace

Tensor Module::forward(const Tensor&) {
  throw NotImplementedError("Module [" + name() + "] is missing the required \"forward\" function");
}

void Module::check_new_name(const std::string& name, const char* what) const {
  KINDLE_CHECK_AS(KeyError, name.find('.') == std::string::npos, what, " name can't contain \".\", got: ", name);
  KINDLE_CHECK_AS(KeyError, !name.empty(), what, " name can't be empty string \"\"");
  KINDLE_CHECK_AS(KeyError, !parameters_.contains(name) && !buffers_.contains(name) && !children_.contains(name),
                  "attribute '", name, "' already exists");
}

Tensor Module::register_parameter(const std::string& name, Tensor t, bool requires_grad) {
  check_new_name(name, "parameter");
  if (t.defined()) {
    KINDLE_CHECK_VALUE(t.is_leaf(), "Cannot assign non-leaf Tensor to parameter '", name,
                       "'. Model parameters must be created explicitly. To express '", name,
                       "' as a function of another Tensor, compute the value in the forward() method.");
    KINDLE_CHECK_TYPE(!requires_grad || t.is_floating_point(),
                      "register_parameter: only floating point tensors can require gradients, got ", t.dtype(),
                      " for '", name, "'");
    t.requires_grad_(requires_grad);
  }
  parameters_.insert(name, t);
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_new_name(name, "buffer");
  buffers_.insert(name, t);
  if (!persistent) non_persistent_.insert(name);
  return t;
}

void Module::add_child(const std::string& name, Ptr<Module> module) {
  check_new_name(name, "module");
  children_.insert(name, std::move(module));
}

void Module::replace_or_add_child(const std::string& name, Ptr<Module> module) {
  if (children_.contains(name)) {
    children_.insert(name, std::move(module));
  } else {
    add_child(name, std::move(module));
  }
}

void Module::replace_parameter(const std::string& name, Tensor t) {
  Tensor* p = parameters_.find(name);
  KINDLE_CHECK_AS(KeyError, p != nullptr, this->name(), " has no parameter '", name, "'");
  bool rg = t.defined() && t.is_floating_point();
  if (t.defined()) t.requires_grad_(rg);
  *p = t;
}

void Module::replace_buffer(const std::string& name, Tensor t) {
  Tensor* p = buffers_.find(name);
  KINDLE_CHECK_AS(KeyError, p != nullptr, this->name(), " has no buffer '", name, "'");
  *p = t;
}

// ---- iteration

OrderedDict<Module*> Module::named_modules(const std::string& prefix) {
  OrderedDict<Module*> out;
  std::unordered_set<const Module*> memo;
  std::function<void(Module*, const std::string&)> walk = [&](Module* m, const std::string& p) {
    if (!memo.insert(m).second) return;
    out.insert(p, m);
    for (auto& [n, child] : m->children_)
      if (child) walk(child.get(), join_prefix(p, n));
  };
  walk(this, prefix);
  return out;
}

std::vector<Module*> Module::modules() { return named_modules().values(); }

template <typename F>
void Module::collect(const char* kind, bool recurse, F&& emit) const {
  std::unordered_set<const TensorImpl*> seen;
  auto own = [&](const Module* m, const std::string& prefix) {
    const auto& dict = kind[0] == 'p' ? m->parameters_ : m->buffers_;
    for (auto& [n, t] : dict) {
      if (!t.defined() || !seen.insert(t.impl()).second) continue;
      emit(join_prefix(prefix, n), t);
    }
  };
  if (!recurse) {
    own(this, "");
    return;
  }
  for (auto& [prefix, m] : const_cast<Module*>(this)->named_modules()) own(m, prefix);
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  collect("p", recurse, [&](const std::string&, const Tensor& t) { out.push_back(t); });
  return out;
}

StateDict Module::named_parameters(bool recurse) const {
  StateDict out;
  collect("p", recurse, [&](const std::string& n, const Tensor& t) { out.insert(n, t); });
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  collect("b", recurse, [&](const std::string&, const Tensor& t) { out.push_back(t); });
  return out;
}

StateDict Module::named_buffers(bool recurse) const {
  StateDict out;
  collect("b", recurse, [&](const std::string& n, const Tensor& t) { out.insert(n, t); });
  return out;
}

OrderedDict<Ptr<Module>> Module::named_children() const {
  OrderedDict<Ptr<Module>> out;
  std::unordered_set<const Module*> memo;
  for (auto& [n, c] : children_)
    if (c && memo.insert(c.get()).second) out.insert(n, c);
  return out;
}

std::vector<Ptr<Module>> Module::children() const { return named_children().values(); }

Ptr<Module> Module::get_submodule(const std::string& target) const {
  KINDLE_CHECK(!target.empty(), "get_submodule: an empty target names the module itself, which is not shared");
  const Module* m = this;
  Ptr<Module> cur;
  size_t start = 0;
  while (start <= target.size()) {
    size_t dot = target.find('.', start);
    std::string item = target.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const Ptr<Module>* c = m->children_.find(item);
    KINDLE_CHECK(c != nullptr && *c, m->name(), " has no attribute `", item, "`");
    cur = *c;
    m = cur.get();
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

// ---- modes and conversion

void Module::train(bool on) {
  training_ = on;
  for (auto& [n, c] : children_)
    if (c) c->train(on);
}

void Module::to(DType dtype) {
  KINDLE_CHECK_TYPE(is_floating_point(dtype),
                    "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=", dtype);
  autograd::NoGradGuard no_grad;
  for (Module* m : modules()) {
    for (auto& [n, p] : m->parameters_) {
      if (!p.defined() || !p.is_floating_point() || p.dtype() == dtype) continue;
      Tensor g = p.grad();
      // Same handle, new bytes: members and optimizers holding `p` keep working (Python's
      // param.data = ...). The grad is reset first so set_grad's dtype check sees the new dtype.
      if (g.defined()) p.set_grad(Tensor());
      p.impl()->set_data(*p.to(dtype).impl());
      if (g.defined()) p.set_grad(g.to(dtype));
    }
    for (auto& [n, b] : m->buffers_)
      if (b.defined() && b.is_floating_point() && b.dtype() != dtype) b.impl()->set_data(*b.to(dtype).impl());
  }
}

void Module::to(Device device, bool /*non_blocking*/) {
  KINDLE_CHECK(device.is_cpu(), "Module.to: device '", device,
               "' is not available; Kindle has kernels for the CPU only");
}

void Module::zero_grad(bool set_to_none) {
  for (const Tensor& p : parameters()) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none) {
      p.set_grad(Tensor());
    } else {
      if (g.grad_fn()) g.detach_();
      else g.requires_grad_(false);
      g.zero_();
    }
  }
}

void Module::requires_grad_(bool requires_grad) {
  for (const Tensor& p : parameters()) p.requires_grad_(requires_grad);
}

void Module::apply(const std::function<void(Module&)>& fn) {
  for (auto& c : children()) c->apply(fn);
  fn(*this);
}

// ---- state dicts

StateDict Module::state_dict() const {
  StateDict out;
  std::function<void(const Module*, const std::string&)> walk = [&](const Module* m, const std::string& prefix) {
    for (auto& [n, p] : m->parameters_)
      if (p.defined()) out.insert(prefix + n, p.detach());
    for (auto& [n, b] : m->buffers_)
      if (b.defined() && !m->non_persistent_.count(n)) out.insert(prefix + n, b.detach());
    for (auto& [n, c] : m->children_)
      if (c) walk(c.get(), prefix + n + ".");
  };
  walk(this, "");
  return out;
}

// Python's _load_from_state_dict, module by module: this module's own entries, then the keys
// under its prefix that name nothing here (unexpected), then each child on its own prefix.
void Module::load_recursive(const StateDict& sd, const std::string& prefix, std::vector<std::string>& missing,
                            std::vector<std::string>& unexpected, std::vector<std::string>& errors) {
  OrderedDict<Tensor> local;
  for (auto& [n, p] : parameters_)
    if (p.defined()) local.insert(n, p);
  for (auto& [n, b] : buffers_)
    if (b.defined() && !non_persistent_.count(n)) local.insert(n, b);
  for (auto& [n, param] : local) {
    std::string key = prefix + n;
    const Tensor* found = sd.find(key);
    if (!found) {
      missing.push_back(key);
      continue;
    }
    Tensor input = *found;
    if (!input.defined()) {
      errors.push_back("While copying the parameter named \"" + key +
                       "\", expected torch.Tensor or Tensor-like object from checkpoint but received an "
                       "undefined Tensor");
      continue;
    }
    if (param.dim() == 0 && input.dim() == 1 && input.size(0) == 1) input = input.select(0, 0);
    if (!(input.sizes() == param.sizes())) {
      errors.push_back("size mismatch for " + key + ": copying a param with shape " + size_str(input.sizes()) +
                       " from checkpoint, the shape in current model is " + size_str(param.sizes()) + ".");
      continue;
    }
    try {
      autograd::NoGradGuard no_grad;
      param.copy_(input);
    } catch (const std::exception& e) {
      errors.push_back("While copying the parameter named \"" + key + "\", whose dimensions in the model are " +
                       size_str(param.sizes()) + " and whose dimensions in the checkpoint are " +
                       size_str(input.sizes()) + ", an exception occurred : ('" + e.what() + "',).");
    }
  }
  for (auto& [key, v] : sd) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    std::string rest = key.substr(prefix.size());
    size_t dot = rest.find('.');
    if (dot != std::string::npos) {
      if (!children_.contains(rest.substr(0, dot))) unexpected.push_back(key);
    } else if (!local.contains(rest)) {
      unexpected.push_back(key);
    }
  }
  for (auto& [n, c] : children_)
    if (c) c->load_recursive(sd, prefix + n + ".", missing, unexpected, errors);
}

IncompatibleKeys Module::load_state_dict(const StateDict& sd, bool strict) {
  IncompatibleKeys keys;
  std::vector<std::string> errors;
  load_recursive(sd, "", keys.missing_keys, keys.unexpected_keys, errors);
  auto quoted = [](const std::vector<std::string>& ks) {
    std::string s;
    for (size_t i = 0; i < ks.size(); ++i) s += (i ? ", \"" : "\"") + ks[i] + "\"";
    return s;
  };
  if (strict) {
    if (!keys.unexpected_keys.empty())
      errors.insert(errors.begin(), "Unexpected key(s) in state_dict: " + quoted(keys.unexpected_keys) + ". ");
    if (!keys.missing_keys.empty())
      errors.insert(errors.begin(), "Missing key(s) in state_dict: " + quoted(keys.missing_keys) + ". ");
  }
  if (!errors.empty()) {
    std::string msg = "Error(s) in loading state_dict for " + name() + ":";
    for (auto& e : errors) msg += "\n\t" + e;
    throw Error(msg);
  }
  return keys;
}

void Module::save(const std::string& path) const { kindle::save(state_dict(), path); }

void Module::load(const std::string& path, bool strict) { load_state_dict(kindle::load(path), strict); }

void Module::save(serialize::OutputArchive& archive) const {
  for (const auto& [k, t] : state_dict()) archive.write(k, t);
}

void Module::load(serialize::InputArchive& archive) {
  StateDict sd = state_dict();
  for (auto& [k, t] : sd) {
    Tensor target = t;
    archive.read(k, target);  // same shape: copied into the module's own tensor
    KINDLE_CHECK_VALUE(target.is_same(t), "Module.load: '", k, "' has shape ", target.sizes(), " in the archive but ",
                       t.sizes(), " in ", name());
  }
}

// ---- printing

std::string Module::name() const {
  const char* mangled = typeid(*this).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string full = status == 0 && demangled ? demangled : mangled;
  std::free(demangled);
  // Drop namespaces (but not those inside template arguments).
  size_t angle = full.find('<');
  size_t colon = full.rfind("::", angle == std::string::npos ? std::string::npos : angle);
  std::string name = colon == std::string::npos ? full : full.substr(colon + 2);
  if (name.size() > 4 && name.ends_with("Impl")) name.resize(name.size() - 4);  // a holder's module
  return name;
}

void Module::pretty_print(std::ostream& stream) const { stream << repr(); }

void detail::throw_empty_holder(const char* contained) {
  int status = 0;
  char* demangled = abi::__cxa_demangle(contained, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled ? demangled : contained;
  std::free(demangled);
  KINDLE_ERROR("Accessing empty ModuleHolder of ", name,
              ": construct it (nn::Linear(3, 4)) or assign it (fc = register_module(\"fc\", ...)) first");
}

std::string Module::repr() const {
  std::vector<std::string> extra_lines, child_lines;
  std::string extra = extra_repr();
  if (!extra.empty()) {
    std::istringstream is(extra);
    for (std::string line; std::getline(is, line);) extra_lines.push_back(line);
  }
  for (auto& [n, c] : children_) child_lines.push_back("(" + n + "): " + add_indent(c ? c->repr() : "None", 2));
  std::string s = name() + "(";
  if (!extra_lines.empty() || !child_lines.empty()) {
    if (extra_lines.size() == 1 && child_lines.empty()) {
      s += extra_lines[0];
    } else {
      s += "\n";
      for (auto& l : extra_lines) s += "  " + l + "\n";
      for (auto& l : child_lines) s += "  " + l + "\n";
    }
  }
  return s + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

}  // namespace kindle::nn
