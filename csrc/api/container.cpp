// Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict.
#include "kindle/nn/container.h"

#include <sstream>

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

namespace {
// Python's line for a parameter in these containers' reprs: ParameterList names the dtype,
// ParameterDict the legacy tensor type ("kindle.FloatTensor"), as torch.nn does.
std::string size_text(const Tensor& t) {
  std::string s;
  for (int64_t d : t.sizes()) s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

const char* legacy_type(DType d) {
  switch (d) {
    case kFloat32: return "FloatTensor";
    case kFloat64: return "DoubleTensor";
    case kFloat16: return "HalfTensor";
    case kBFloat16: return "BFloat16Tensor";
    case kInt64: return "LongTensor";
    case kInt32: return "IntTensor";
    case kInt16: return "ShortTensor";
    case kInt8: return "CharTensor";
    case kUInt8: return "ByteTensor";
    case kBool: return "BoolTensor";
    case kComplex64: return "ComplexFloatTensor";
    case kComplex128: return "ComplexDoubleTensor";
    default: return dtype_name(d);
  }
}

std::string parameter_lines(const OrderedDict<Tensor>& params, bool legacy_names) {
  std::ostringstream os;
  bool first = true;
  for (const auto& item : params) {
    const Tensor& t = item.value();
    os << (first ? "" : "\n") << "  (" << item.key() << "): Parameter containing: "
       << "[kindle." << (legacy_names ? legacy_type(t.dtype()) : dtype_name(t.dtype())) << " of size "
       << size_text(t) << "]";
    first = false;
  }
  return os.str();
}
}  // namespace

void ParameterListImpl::append(const Tensor& param) {
  KINDLE_CHECK_VALUE(param.defined(), "ParameterList.append: got an undefined tensor");
  register_parameter(std::to_string(size()), param, param.requires_grad());
}

Tensor& ParameterListImpl::at(int64_t index) {
  int64_t i = detail::wrap_index(index, size(), "ParameterList");
  return own_parameter(std::to_string(i));
}

std::string ParameterListImpl::extra_repr() const { return parameter_lines(own_parameters(), false); }

Tensor& ParameterDictImpl::insert(const std::string& key, const Tensor& param) {
  KINDLE_CHECK_VALUE(param.defined(), "ParameterDict.insert: got an undefined tensor for '", key, "'");
  if (contains(key)) {
    replace_parameter(key, param);
    Tensor& slot = own_parameter(key);
    slot.requires_grad_(param.requires_grad());
    return slot;
  }
  register_parameter(key, param, param.requires_grad());
  return own_parameter(key);
}

Tensor ParameterDictImpl::pop(const std::string& key) {
  Tensor t = get(key);  // KeyError when absent
  erase_parameter(key);
  return t;
}

void ParameterDictImpl::clear() {
  for (const std::string& k : keys()) erase_parameter(k);
}

Tensor& ParameterDictImpl::own_parameter_at(const std::string& key) {
  KINDLE_CHECK_AS(KeyError, contains(key), "'", key, "'");
  return own_parameter(key);
}

std::string ParameterDictImpl::extra_repr() const { return parameter_lines(own_parameters(), true); }

}  // namespace kindle::nn
