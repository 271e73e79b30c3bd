// kindle::Value: the object model of checkpoints (see serialize.h).
#include <cstdio>
#include <sstream>

#include "serialize/json.h"
#include "kindle/serialize.h"

namespace kindle {

struct Value::Map {
  Entries entries;
  bool ordered = false;
  Value metadata;
};

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
    case Value::Kind::Bytes: return "bytes";
    case Value::Kind::Object: return "object";
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
    case 8: return Kind::Dict;
    case 9: return Kind::Bytes;
    default: return Kind::Object;
  }
}

Value Value::dict(Entries entries) {
  Value v;
  v.v_ = std::make_shared<Map>(Map{std::move(entries), false, Value()});
  return v;
}

Value Value::ordered_dict(Entries entries) {
  Value v;
  v.v_ = std::make_shared<Map>(Map{std::move(entries), true, Value()});
  return v;
}

Value Value::bytes(std::string data) {
  Value v;
  v.v_ = Bytes{std::move(data)};
  return v;
}

Value Value::object(std::string type, Items args, bool by_new) {
  Value v;
  auto o = std::make_shared<Object>();
  o->type = std::move(type);
  o->args = std::move(args);
  o->by_new = by_new;
  v.v_ = std::move(o);
  return v;
}

bool Value::is_ordered_dict() const { return is_dict() && std::get<8>(v_)->ordered; }

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
  return std::get<8>(v_)->entries;
}
Value::Entries& Value::entries(const char* what) {
  KINDLE_VALUE_EXPECT(is_dict(), "dict");
  return std::get<8>(v_)->entries;
}
const std::string& Value::to_bytes(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::Bytes, "bytes");
  return std::get<Bytes>(v_).data;
}
const Value::Object& Value::object(const char* what) const {
  KINDLE_VALUE_EXPECT(kind() == Kind::Object, "an object");
  return *std::get<10>(v_);
}
Value::Object& Value::object(const char* what) {
  KINDLE_VALUE_EXPECT(kind() == Kind::Object, "an object");
  return *std::get<10>(v_);
}
const Value& Value::dict_metadata() const {
  static const Value none;
  return is_dict() ? std::get<8>(v_)->metadata : none;
}
void Value::set_dict_metadata(Value metadata) {
  const char* what = "set_dict_metadata";
  KINDLE_VALUE_EXPECT(is_ordered_dict(), "an OrderedDict");
  std::get<8>(v_)->metadata = std::move(metadata);
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
    case Value::Kind::Bytes: return a.to_bytes() == b.to_bytes();
    case Value::Kind::Object: {
      const Value::Object &x = a.object(), &y = b.object();
      if (&x == &y) return true;
      if (x.type != y.type || x.by_new != y.by_new || x.args.size() != y.args.size() || !(x.kwargs == y.kwargs) ||
          !(x.state == y.state))
        return false;
      for (size_t i = 0; i < x.args.size(); ++i)
        if (!(x.args[i] == y.args[i])) return false;
      return true;
    }
    case Value::Kind::Dict: {
      if (a.is_ordered_dict() != b.is_ordered_dict()) return false;
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
    case Kind::Bytes: {
      out = "b'";
      for (unsigned char c : to_bytes()) {
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
          out += char(c);
        } else {
          char hex[5];
          std::snprintf(hex, sizeof hex, "\\x%02x", c);
          out += hex;
        }
      }
      return out + "'";
    }
    case Kind::Object: {
      out = object().type + "(";
      for (size_t i = 0; i < object().args.size(); ++i) out += (i ? ", " : "") + object().args[i].repr();
      return out + ")";
    }
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
      out = is_ordered_dict() ? "OrderedDict({" : "{";
      bool first = true;
      for (auto& [k, v] : entries()) {
        out += (first ? "" : ", ") + k.repr() + ": " + v.repr();
        first = false;
      }
      return out + (is_ordered_dict() ? "})" : "}");
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
