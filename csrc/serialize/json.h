// JSON for checkpoint headers, parsed and escaped by nlohmann/json (json.cpp is the only file that
// includes it). Node keeps what a safetensors reader needs that a generic DOM loses: object keys in
// file order (duplicates: the last value wins, at the first position, as Python's json.loads),
// integers apart from floats, and integers beyond 64 bits as their digits (a hostile shape or
// offset is then reported as out of range rather than as "not an integer").
#pragma once
#include <cstdint>
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
  std::vector<std::pair<std::string, Node>> object;

  const Node* find(const std::string& key) const {
    for (auto& kv : object)
      if (kv.first == key) return &kv.second;
    return nullptr;
  }
  const char* type_name() const;  // Python's name for the parsed value: dict, list, str, int, ...
};

// Parses `text` (strict JSON, UTF-8); on failure returns false and sets `error`. Containers nested
// deeper than `max_depth` are an error, so nothing downstream recurses without bound.
bool parse(const std::string& text, Node& out, std::string& error, int max_depth);

// Compact JSON with every non-ASCII character escaped (Python's json.dumps(..., separators=(",", ":"))
// spelling); ValueError naming `what` if a string is not valid UTF-8.
void write(std::string& out, const Node& n, const char* what = "kindle.save");
void write_string(std::string& out, const std::string& utf8, const char* what = "kindle.save");

// Python's repr of a parsed value for messages ('a', [1, 2], {'k': None}, True), cut at `limit` chars.
std::string py_repr(const Node& n, size_t limit = 200);
// Python's float repr: shortest round-trip digits ("0.1", "1e-08", "1e+16", "100.0").
void write_double(std::string& out, double d);

Node str(std::string s);
Node integer(int64_t i);
Node object();
Node array();

}  // namespace kindle::json
