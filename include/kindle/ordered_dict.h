// OrderedDict: string keys in insertion order with O(1) lookup. State dicts (name -> Tensor),
// a module's parameters, buffers and children all keep their registration order, as in Python.
#pragma once
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kindle/error.h"

namespace kindle {

// Python's KeyError (a LookupError, as IndexError is): a missing or clashing name.
class KeyError : public IndexError {
 public:
  using IndexError::IndexError;
};

template <typename V>
class OrderedDict {
 public:
  // A (key, value) pair; also item.key() / item.value(), as libtorch's OrderedDict items.
  struct Item : std::pair<std::string, V> {
    using std::pair<std::string, V>::pair;
    const std::string& key() const noexcept { return this->first; }
    V& value() noexcept { return this->second; }
    const V& value() const noexcept { return this->second; }
  };

  OrderedDict() = default;
  OrderedDict(std::initializer_list<Item> items) {
    for (auto& it : items) insert(it.first, it.second);
  }

  // Inserts or replaces (a replaced key keeps its position, like a Python dict).
  V& insert(const std::string& key, V value) {
    auto it = index_.find(key);
    if (it != index_.end()) return items_[it->second].second = std::move(value);
    index_.emplace(key, items_.size());
    items_.emplace_back(key, std::move(value));
    return items_.back().second;
  }
  bool contains(const std::string& key) const { return index_.count(key) != 0; }
  const V* find(const std::string& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  V* find(const std::string& key) {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &items_[it->second].second;
  }
  // Raises KeyError naming the key when absent.
  const V& at(const std::string& key) const {
    const V* v = find(key);
    KINDLE_CHECK_AS(KeyError, v != nullptr, "'", key, "'");
    return *v;
  }
  V& at(const std::string& key) { return const_cast<V&>(static_cast<const OrderedDict&>(*this).at(key)); }
  V& operator[](const std::string& key) { return at(key); }
  const V& operator[](const std::string& key) const { return at(key); }
  // Removes a key (order of the others is kept); returns whether it was there.
  bool erase(const std::string& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return false;
    size_t pos = it->second;
    index_.erase(it);
    items_.erase(items_.begin() + pos);
    for (auto& kv : index_)
      if (kv.second > pos) --kv.second;
    return true;
  }
  void clear() {
    items_.clear();
    index_.clear();
  }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    k.reserve(items_.size());
    for (auto& it : items_) k.push_back(it.first);
    return k;
  }
  std::vector<V> values() const {
    std::vector<V> v;
    v.reserve(items_.size());
    for (auto& it : items_) v.push_back(it.second);
    return v;
  }
  const std::vector<Item>& items() const { return items_; }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<Item> items_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace kindle
