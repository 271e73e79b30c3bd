// kindle::Value: the object model of checkpoints (see serialize.h).
#include <sstream>

#include "serialize/json.h"
#include "kindle/serialize.h"

namespace kindle {

const char* value_kind_name(Value::Kind k) {
  switch (k) {
    case Value::Kind::None: return "None";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Double: return "float";
    case Value::Kind::String: return "str";
    case Value::Kind::Tensor: return "Tensor";
    case Value::Kind::DType: return "dtype";
    case Value::Kind::List: return "list";
    case Value::Kind::Tuple: return "tuple";
    case Value::Kind::Set: return "set";
    case Value::Kind::Dict: return "dict";
  }
  return "?";
}

Value::Kind Value::kind() const {
  switch (v_.index()) {
    case 0: return Kind::None;
    case 1: return Kind::Bool;
    case 2: return Kind::Int;
    case 3: return Kind::Double;
    case 4: return Kind::String;
    case 5: return Kind::Tensor;
    case 6: return Kind::DType;
    case 7: return std::get<7>(v_)->kind;
    default: return Kind::Dict;
  }
}

Value Value::from_state_dict(const StateDict& sd) {
  Entries e;
  e.reserve(sd.size());
  for (auto& [k, t] : sd) e.emplace_back(Value(k), Value(t));
  return dict(std::move(e));
}

#define KINDLE_VALUE_EXPECT(cond, want) \
  KINDLE_CHECK_TYPE(cond, what, ": expected ", want, ", got ", value_kind_name(kind()))

bool Value::to_bool(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::Bool, "bool");
  return std::get<bool>(v_);
}
int64_t Value::to_int(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::Int, "int");
  return std::get<int64_t>(v_);
}
double Value::to_double(const char* what) const {
  KINDLE_VALUE_EXPECT(is_number(), "a number");
  return is_int() ? double(std::get<int64_t>(v_)) : std::get<double>(v_);
}
const std::string& Value::to_string(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::String, "str");
  return std::get<std::string>(v_);
}
const Tensor& Value::to_tensor(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::Tensor, "Tensor");
  return std::get<Tensor>(v_);
}
DType Value::to_dtype(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::DType, "dtype");
  return std::get<DType>(v_);
}
const Value::Items& Value::items(const char* what) const {
  KINDLE_VALUE_EXPECT(is_sequence(), "a list, tuple or set");
  return std::get<7>(v_)->items;
}
Value::Items& Value::items(const char* what) {
  KINDLE_VALUE_EXPECT(is_sequence(), "a list, tuple or set");
  return std::get<7>(v_)->items;
}
const Value::Entries& Value::entries(const char* what) const {
  KINDLE_VALUE_EXPECT(is_dict(), "dict");
  return *std::get<8>(v_);
}
Value::Entries& Value::entries(const char* what) {
  KINDLE_VALUE_EXPECT(is_dict(), "dict");
  return *std::get<8>(v_);
}
#undef KINDLE_VALUE_EXPECT

const Value* Value::get(const Value& key) const {
  for (auto& [k, v] : entries())
    if (k == key) return &v;
  return nullptr;
}

const Value& Value::at(const Value& key, const char* what) const {
  const Value* v = get(key);
  KINDLE_CHECK_AS(KeyError, v != nullptr, what, ": missing key ", key.repr());
  return *v;
}

void Value::set_item(const Value& key, Value value) {
  for (auto& [k, v] : entries())
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries().emplace_back(key, std::move(value));
}

StateDict Value::to_state_dict(const char* what) const {
  StateDict sd;
  for (auto& [k, v] : entries(what)) {
    KINDLE_CHECK_TYPE(k.is_string() && v.is_tensor(), what, ": expected a dict of str to Tensor, found the entry ",
                      k.repr(), ": ", value_kind_name(v.kind()));
    sd.insert(k.to_string(), v.to_tensor());
  }
  return sd;
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::None: return true;
    case Value::Kind::Bool: return std::get<bool>(a.v_) == std::get<bool>(b.v_);
    case Value::Kind::Int: return std::get<int64_t>(a.v_) == std::get<int64_t>(b.v_);
    case Value::Kind::Double: return std::get<double>(a.v_) == std::get<double>(b.v_);
    case Value::Kind::String: return std::get<std::string>(a.v_) == std::get<std::string>(b.v_);
    case Value::Kind::Tensor: return std::get<Tensor>(a.v_).is_same(std::get<Tensor>(b.v_));
    case Value::Kind::DType: return std::get<DType>(a.v_) == std::get<DType>(b.v_);
    case Value::Kind::Dict: {
      auto& x = a.entries();
      auto& y = b.entries();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!(x[i].first == y[i].first) || !(x[i].second == y[i].second)) return false;
      return true;
    }
    default: {
      auto& x = a.items();
      auto& y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!(x[i] == y[i])) return false;
      return true;
    }
  }
}

std::string Value::repr() const {
  std::string out;
  switch (kind()) {
    case Kind::None: return "None";
    case Kind::Bool: return std::get<bool>(v_) ? "True" : "False";
    case Kind::Int: return std::to_string(std::get<int64_t>(v_));
    case Kind::Double: json::write_double(out, std::get<double>(v_)); return out;
    case Kind::String: return "'" + std::get<std::string>(v_) + "'";
    case Kind::Tensor: {
      std::ostringstream os;
      os << "Tensor(shape=" << std::get<Tensor>(v_).sizes() << ", dtype=" << std::get<Tensor>(v_).dtype() << ")";
      return os.str();
    }
    case Kind::DType: {
      std::ostringstream os;
      os << std::get<DType>(v_);
      return os.str();
    }
    case Kind::Dict: {
      out = "{";
      bool first = true;
      for (auto& [k, v] : entries()) {
        out += (first ? "" : ", ") + k.repr() + ": " + v.repr();
        first = false;
      }
      return out + "}";
    }
    default: {
      const char* open = kind() == Kind::List ? "[" : kind() == Kind::Tuple ? "(" : "{";
      const char* close = kind() == Kind::List ? "]" : kind() == Kind::Tuple ? ")" : "}";
      out = open;
      auto& xs = items();
      for (size_t i = 0; i < xs.size(); ++i) out += (i ? ", " : "") + xs[i].repr();
      if (kind() == Kind::Tuple && xs.size() == 1) out += ",";
      return out + close;
    }
  }
}

}  // namespace kindle
