// JSON for safetensors headers (see json.h).
#include "json.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "kindle/error.h"

namespace kindle::json {

const char* Node::type_name() const {
  switch (type) {
    case Type::Null: return "null";
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

namespace {

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  Parser(const std::string& t, int max_depth) : t_(t), max_depth_(max_depth) {}

  bool run(Node& out, std::string& err) {
    skip_ws();
    if (!value(out, 0)) {
      err = err_ + " at position " + std::to_string(pos_);
      return false;
    }
    skip_ws();
    if (pos_ != t_.size()) {
      err = "extra data at position " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  bool fail(const char* what) {
    err_ = what;
    return false;
  }
  void skip_ws() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  bool literal(const char* word) {
    size_t n = std::strlen(word);
    if (t_.compare(pos_, n, word) != 0) return fail("invalid literal");
    pos_ += n;
    return true;
  }

  bool value(Node& out, int depth) {
    if (depth > max_depth_) return fail("nesting too deep");
    if (pos_ >= t_.size()) return fail("unexpected end of input");
    char c = t_[pos_];
    switch (c) {
      case '{': return object(out, depth);
      case '[': return array(out, depth);
      case '"': out.type = Node::Type::String; return string(out.s);
      case 't': out.type = Node::Type::Bool; out.b = true; return literal("true");
      case 'f': out.type = Node::Type::Bool; out.b = false; return literal("false");
      case 'n': out.type = Node::Type::Null; return literal("null");
      default: return number(out);
    }
  }

  bool object(Node& out, int depth) {
    out.type = Node::Type::Object;
    ++pos_;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != '"') return fail("expected a string key");
      std::string key;
      if (!string(key)) return false;
      skip_ws();
      if (pos_ >= t_.size() || t_[pos_] != ':') return fail("expected ':'");
      ++pos_;
      skip_ws();
      Node v;
      if (!value(v, depth + 1)) return false;
      bool replaced = false;
      for (auto& kv : out.object)
        if (kv.first == key) {
          kv.second = std::move(v);
          replaced = true;
          break;
        }
      if (!replaced) out.object.emplace_back(std::move(key), std::move(v));
      skip_ws();
      if (pos_ < t_.size() && t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < t_.size() && t_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool array(Node& out, int depth) {
    out.type = Node::Type::Array;
    ++pos_;
    skip_ws();
    if (pos_ < t_.size() && t_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_ws();
      out.array.emplace_back();
      if (!value(out.array.back(), depth + 1)) return false;
      skip_ws();
      if (pos_ < t_.size() && t_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < t_.size() && t_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool hex4(uint32_t& v) {
    if (pos_ + 4 > t_.size()) return fail("truncated \\u escape");
    v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = t_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= uint32_t(c - '0');
      else if (c >= 'a' && c <= 'f') v |= uint32_t(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= uint32_t(c - 'A' + 10);
      else return fail("invalid \\u escape");
    }
    return true;
  }

  bool string(std::string& out) {
    ++pos_;  // opening quote
    while (true) {
      if (pos_ >= t_.size()) return fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(t_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return fail("control character in string");
      if (c != '\\') {
        out += char(c);
        continue;
      }
      if (pos_ >= t_.size()) return fail("unterminated string");
      char e = t_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00 && t_.compare(pos_, 2, "\\u") == 0) {
            size_t save = pos_;
            pos_ += 2;
            uint32_t lo;
            if (!hex4(lo)) return false;
            if (lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else pos_ = save;
          }
          append_utf8(out, cp);
          break;
        }
        default: return fail("invalid escape");
      }
    }
  }

  bool number(Node& out) {
    size_t start = pos_;
    if (pos_ < t_.size() && t_[pos_] == '-') ++pos_;
    if (pos_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[pos_]))) return fail("expecting value");
    if (t_[pos_] == '0') ++pos_;
    else
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    bool is_float = false;
    if (pos_ < t_.size() && t_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (pos_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[pos_]))) return fail("invalid number");
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    }
    if (pos_ < t_.size() && (t_[pos_] == 'e' || t_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < t_.size() && (t_[pos_] == '+' || t_[pos_] == '-')) ++pos_;
      if (pos_ >= t_.size() || !std::isdigit(static_cast<unsigned char>(t_[pos_]))) return fail("invalid number");
      while (pos_ < t_.size() && std::isdigit(static_cast<unsigned char>(t_[pos_]))) ++pos_;
    }
    const char* b = t_.data() + start;
    const char* e = t_.data() + pos_;
    if (is_float) {
      out.type = Node::Type::Float;
      auto r = std::from_chars(b, e, out.f);
      if (r.ec == std::errc::result_out_of_range) out.f = (*b == '-') ? -HUGE_VAL : HUGE_VAL;  // as Python
      else if (r.ec != std::errc()) return fail("invalid number");
      return true;
    }
    auto r = std::from_chars(b, e, out.i);
    if (r.ec == std::errc::result_out_of_range) {
      out.type = Node::Type::BigInt;
      out.s.assign(b, e);
      return true;
    }
    if (r.ec != std::errc()) return fail("invalid number");
    out.type = Node::Type::Int;
    return true;
  }

  const std::string& t_;
  int max_depth_;
  size_t pos_ = 0;
  std::string err_;
};

}  // namespace

bool parse(const std::string& text, Node& out, std::string& error, int max_depth) {
  out = Node();
  return Parser(text, max_depth).run(out, error);
}

void write_string(std::string& out, const std::string& s) {
  static const char* hex = "0123456789abcdef";
  auto u4 = [&](uint32_t v) {
    out += "\\u";
    for (int k = 3; k >= 0; --k) out += hex[(v >> (4 * k)) & 0xF];
  };
  out += '"';
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7f) u4(c);
          else out += char(c);
      }
      ++i;
      continue;
    }
    // Python's ensure_ascii: every non-ASCII code point as \uXXXX (surrogate pairs above BMP).
    int n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
    KINDLE_CHECK_VALUE(n != 0 && i + n <= s.size(), "kindle.save: name is not valid UTF-8: '", s, "'");
    uint32_t cp = c & (0x7F >> n);
    for (int k = 1; k < n; ++k) {
      unsigned char cc = static_cast<unsigned char>(s[i + k]);
      KINDLE_CHECK_VALUE((cc & 0xC0) == 0x80, "kindle.save: name is not valid UTF-8: '", s, "'");
      cp = (cp << 6) | (cc & 0x3F);
    }
    KINDLE_CHECK_VALUE(!(cp >= 0xD800 && cp < 0xE000) && cp <= 0x10FFFF &&
                           cp >= (n == 2 ? 0x80u : n == 3 ? 0x800u : 0x10000u),
                       "kindle.save: name is not valid UTF-8: '", s, "'");
    if (cp >= 0x10000) {
      uint32_t v = cp - 0x10000;
      u4(0xD800 + (v >> 10));
      u4(0xDC00 + (v & 0x3FF));
    } else {
      u4(cp);
    }
    i += size_t(n);
  }
  out += '"';
}

void write_double(std::string& out, double d) {
  // Python's float repr: shortest round-trip digits; scientific when the exponent is < -4 or
  // >= 16 ("1e-08", "1e+16"), otherwise positional with at least one decimal ("100.0").
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

void write(std::string& out, const Node& n) {
  switch (n.type) {
    case Node::Type::Null: out += "null"; break;
    case Node::Type::Bool: out += n.b ? "true" : "false"; break;
    case Node::Type::Int: out += std::to_string(n.i); break;
    case Node::Type::BigInt: out += n.s; break;
    case Node::Type::Float: write_double(out, n.f); break;
    case Node::Type::String: write_string(out, n.s); break;
    case Node::Type::Array:
      out += '[';
      for (size_t i = 0; i < n.array.size(); ++i) {
        if (i) out += ',';
        write(out, n.array[i]);
      }
      out += ']';
      break;
    case Node::Type::Object:
      out += '{';
      for (size_t i = 0; i < n.object.size(); ++i) {
        if (i) out += ',';
        write_string(out, n.object[i].first);
        out += ':';
        write(out, n.object[i].second);
      }
      out += '}';
      break;
  }
}

}  // namespace kindle::json
