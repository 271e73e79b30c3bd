// ArrayRef: a non-owning view of contiguous elements (sizes, strides, tensor lists).
// SmallVector: an owning vector with inline storage, so shapes of ordinary rank never allocate.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <ostream>
#include <type_traits>
#include <vector>

namespace kindle {

template <typename T>
class ArrayRef {
 public:
  constexpr ArrayRef() = default;
  constexpr ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  // One element (libtorch's IntArrayRef(3)): the view points at the argument, which lives until
  // the end of the caller's full expression.
  constexpr ArrayRef(const T& one) : data_(&one), size_(1) {}
  // A braced list passed as an argument lives until the end of the caller's full expression, as
  // the view does (GCC warns about the constructor itself, whatever the call site).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  constexpr ArrayRef(std::initializer_list<T> il) : data_(il.begin()), size_(il.size()) {}
#pragma GCC diagnostic pop
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}
  template <typename C, typename = decltype(std::declval<const C&>().data()),
            typename = std::enable_if_t<!std::is_same_v<C, std::vector<T>>>>
  ArrayRef(const C& c) : data_(c.data()), size_(c.size()) {}

  constexpr const T* data() const { return data_; }
  constexpr size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const T* begin() const { return data_; }
  constexpr const T* end() const { return data_ + size_; }
  constexpr const T& operator[](size_t i) const { return data_[i]; }
  const T& back() const { return data_[size_ - 1]; }
  ArrayRef slice(size_t start) const { return {data_ + start, size_ - start}; }
  ArrayRef slice(size_t start, size_t n) const { return {data_ + start, n}; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool equals(ArrayRef o) const { return size_ == o.size_ && std::equal(begin(), end(), o.begin()); }
  friend bool operator==(ArrayRef a, ArrayRef b) { return a.equals(b); }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");

 public:
  SmallVector() = default;
  explicit SmallVector(size_t n, T value = T()) { resize(n, value); }
  SmallVector(std::initializer_list<T> il) { assign(il.begin(), il.end()); }
  SmallVector(ArrayRef<T> a) { assign(a.begin(), a.end()); }
  SmallVector(const SmallVector& o) { assign(o.begin(), o.end()); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) { release(); steal(o); }
    return *this;
  }
  ~SmallVector() { release(); }

  template <typename It>
  void assign(It first, It last) {
    size_ = 0;
    reserve(static_cast<size_t>(last - first));
    for (; first != last; ++first) data_[size_++] = *first;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max(n, cap_ * 2);
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    cap_ = cap;
  }
  void resize(size_t n, T value = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = value;
    size_ = n;
  }
  void push_back(T v) {
    if (size_ == cap_) reserve(size_ + 1);
    data_[size_++] = v;
  }
  void insert(size_t pos, T v) {
    push_back(v);
    for (size_t i = size_ - 1; i > pos; --i) data_[i] = data_[i - 1];
    data_[pos] = v;
  }
  void erase(size_t pos) {
    for (size_t i = pos; i + 1 < size_; ++i) data_[i] = data_[i + 1];
    --size_;
  }
  void pop_back() { --size_; }
  void clear() { size_ = 0; }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  operator ArrayRef<T>() const { return {data_, size_}; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return ArrayRef<T>(a) == ArrayRef<T>(b);
  }

 private:
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    cap_ = N;
    size_ = 0;
  }
  void steal(SmallVector& o) {
    if (o.data_ == o.inline_) {
      data_ = inline_;
      cap_ = N;
      size_ = o.size_;
      std::memcpy(inline_, o.inline_, o.size_ * sizeof(T));
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      size_ = o.size_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    o.size_ = 0;
  }
  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
};

using IntArrayRef = ArrayRef<int64_t>;
using DimVector = SmallVector<int64_t, 6>;

inline std::ostream& operator<<(std::ostream& os, IntArrayRef a) {
  os << '[';
  for (size_t i = 0; i < a.size(); ++i) os << (i ? ", " : "") << a[i];
  return os << ']';
}
template <size_t N>
std::ostream& operator<<(std::ostream& os, const SmallVector<int64_t, N>& a) {
  return os << IntArrayRef(a);
}

}  // namespace kindle
