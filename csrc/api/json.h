// A small JSON reader and writer for safetensors headers: bounded nesting, ints kept apart from
// floats (the format's shapes and offsets must be integers), Python's json.dumps spelling on
// output (compact separators, ensure_ascii, shortest float repr), so C++ and Python write the
// same bytes.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kindle::json {

struct Node {
  enum class Type { Null, Bool, Int, BigInt, Float, String, Array, Object } type = Type::Null;
  bool b = false;
  int64_t i = 0;       // Int
  double f = 0;        // Float
  std::string s;       // String, or the digits of a BigInt (an integer beyond int64)
  std::vector<Node> array;
  std::vector<std::pair<std::string, Node>> object;  // duplicate keys: the last value wins, first position

  const Node* find(const std::string& key) const {
    for (auto& kv : object)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  const char* type_name() const;
};

// Parses `text`; on failure returns false and sets `error` (position and reason).
bool parse(const std::string& text, Node& out, std::string& error, int max_depth = 1000);

// Appends JSON for the pieces (Python's json.dumps(..., separators=(",", ":"))).
void write_string(std::string& out, const std::string& utf8);  // raises ValueError on invalid UTF-8
void write_double(std::string& out, double d);                 // finite only: shortest repr, ".0" if integral
void write(std::string& out, const Node& n);

}  // namespace kindle::json
