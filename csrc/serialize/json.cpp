// JSON for checkpoint headers (see json.h): nlohmann/json's SAX parser builds Node.
#include "json.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "kindle/error.h"

namespace kindle::json {

const char* Node::type_name() const {
  switch (type) {
    case Type::Null: return "NoneType";
    case Type::Bool: return "bool";
    case Type::Int:
    case Type::BigInt: return "int";
    case Type::Float: return "float";
    case Type::String: return "str";
    case Type::Array: return "list";
    case Type::Object: return "dict";
  }
  return "?";
}

Node str(std::string s) {
  Node n;
  n.type = Node::Type::String;
  n.s = std::move(s);
  return n;
}
Node integer(int64_t i) {
  Node n;
  n.type = Node::Type::Int;
  n.i = i;
  return n;
}
Node object() {
  Node n;
  n.type = Node::Type::Object;
  return n;
}
Node array() {
  Node n;
  n.type = Node::Type::Array;
  return n;
}

namespace {

using nl = nlohmann::json;

// Builds a Node from nlohmann's SAX events. `open_` holds the containers being filled; a parent's
// vector never grows while a child is open, so the pointers stay valid.
class Builder {
 public:
  Builder(Node& root, int max_depth) : root_(root), max_depth_(max_depth) {}
  std::string error;

  bool null() { return put(Node()); }
  bool boolean(bool v) {
    Node n;
    n.type = Node::Type::Bool;
    n.b = v;
    return put(std::move(n));
  }
  bool number_integer(nl::number_integer_t v) { return put(integer(v)); }
  bool number_unsigned(nl::number_unsigned_t v) {
    if (v <= uint64_t(INT64_MAX)) return put(integer(int64_t(v)));
    Node n;
    n.type = Node::Type::BigInt;
    n.s = std::to_string(v);
    return put(std::move(n));
  }
  bool number_float(nl::number_float_t v, const nl::string_t& text) {
    Node n;
    if (text.find_first_of(".eE") == std::string::npos) {  // an integer literal beyond 64 bits
      n.type = Node::Type::BigInt;
      n.s = text;
    } else {
      n.type = Node::Type::Float;
      n.f = v;
    }
    return put(std::move(n));
  }
  bool string(nl::string_t& v) { return put(str(std::move(v))); }
  bool binary(nl::binary_t&) { return false; }  // (CBOR and friends only)
  bool start_object(std::size_t) { return open(object()); }
  bool start_array(std::size_t) { return open(array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(nl::string_t& k) {
    Level& l = levels_.back();
    auto [it, fresh] = l.index.try_emplace(k, l.node->object.size());
    l.slot = it->second;
    if (fresh) l.node->object.emplace_back(std::move(k), Node());
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nl::exception& e) {
    // Without nlohmann's "[json.exception...] " prefix; bytes outside printable ASCII (the token it
    // quotes can be invalid UTF-8) as \xNN, so the message is valid text in every language.
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    for (unsigned char c : what) {
      if (c >= 0x20 && c < 0x7f) {
        error += char(c);
      } else {
        char buf[5];
        std::snprintf(buf, sizeof(buf), "\\x%02x", c);
        error += buf;
      }
    }
    return false;
  }

 private:
  struct Level {
    Node* node;
    std::unordered_map<std::string, size_t> index;  // objects: key -> position (linear in the keys)
    size_t slot = 0;
  };

  Node* place(Node n) {
    if (levels_.empty()) {
      root_ = std::move(n);
      return &root_;
    }
    Level& l = levels_.back();
    if (l.node->type == Node::Type::Array) {
      l.node->array.push_back(std::move(n));
      return &l.node->array.back();
    }
    Node& dst = l.node->object[l.slot].second;
    dst = std::move(n);
    return &dst;
  }
  bool put(Node n) {
    place(std::move(n));
    return true;
  }
  bool open(Node n) {
    if (int(levels_.size()) >= max_depth_) {
      error = "containers nested deeper than " + std::to_string(max_depth_) + " levels";
      return false;
    }
    levels_.push_back(Level{place(std::move(n)), {}, 0});
    return true;
  }
  bool close() {
    levels_.pop_back();
    return true;
  }

  Node& root_;
  int max_depth_;
  std::vector<Level> levels_;
};

void repr_string(std::string& out, const std::string& s) {
  out += '\'';
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  out += '\'';
}

void repr(std::string& out, const Node& n, size_t limit) {
  if (out.size() > limit) return;
  switch (n.type) {
    case Node::Type::Null: out += "None"; return;
    case Node::Type::Bool: out += n.b ? "True" : "False"; return;
    case Node::Type::Int: out += std::to_string(n.i); return;
    case Node::Type::BigInt: out += n.s; return;
    case Node::Type::Float: write_double(out, n.f); return;
    case Node::Type::String: repr_string(out, n.s); return;
    case Node::Type::Array:
      out += '[';
      for (size_t k = 0; k < n.array.size() && out.size() <= limit; ++k) {
        if (k) out += ", ";
        repr(out, n.array[k], limit);
      }
      out += ']';
      return;
    case Node::Type::Object:
      out += '{';
      for (size_t k = 0; k < n.object.size() && out.size() <= limit; ++k) {
        if (k) out += ", ";
        repr_string(out, n.object[k].first);
        out += ": ";
        repr(out, n.object[k].second, limit);
      }
      out += '}';
      return;
  }
}

}  // namespace

bool parse(const std::string& text, Node& out, std::string& error, int max_depth) {
  out = Node();
  Builder b(out, max_depth);
  if (nl::sax_parse(text, &b)) return true;
  error = b.error.empty() ? "invalid JSON" : b.error;
  out = Node();  // (bounded by max_depth, so this destruction does not recurse without bound)
  return false;
}

void write_string(std::string& out, const std::string& s, const char* what) {
  try {
    out += nl(s).dump(-1, ' ', /*ensure_ascii=*/true);
  } catch (const nl::type_error&) {
    throw ValueError(std::string(what) + ": name is not valid UTF-8: '" + s + "'");
  }
}

void write_double(std::string& out, double d) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  int exp10 = std::atoi(sci.c_str() + sci.find('e') + 1);
  if (exp10 < -4 || exp10 >= 16) {
    out += sci;
    return;
  }
  r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::fixed);
  std::string fixed(buf, r.ptr);
  if (fixed.find('.') == std::string::npos) fixed += ".0";
  out += fixed;
}

void write(std::string& out, const Node& n, const char* what) {
  switch (n.type) {
    case Node::Type::Null: out += "null"; break;
    case Node::Type::Bool: out += n.b ? "true" : "false"; break;
    case Node::Type::Int: out += std::to_string(n.i); break;
    case Node::Type::BigInt: out += n.s; break;
    case Node::Type::Float: out += nl(n.f).dump(); break;
    case Node::Type::String: write_string(out, n.s, what); break;
    case Node::Type::Array:
      out += '[';
      for (size_t k = 0; k < n.array.size(); ++k) {
        if (k) out += ',';
        write(out, n.array[k], what);
      }
      out += ']';
      break;
    case Node::Type::Object:
      out += '{';
      for (size_t k = 0; k < n.object.size(); ++k) {
        if (k) out += ',';
        write_string(out, n.object[k].first, what);
        out += ':';
        write(out, n.object[k].second, what);
      }
      out += '}';
      break;
  }
}

std::string py_repr(const Node& n, size_t limit) {
  std::string s;
  repr(s, n, limit);
  return s.size() > limit ? s.substr(0, limit) : s;
}

}  // namespace kindle::json
