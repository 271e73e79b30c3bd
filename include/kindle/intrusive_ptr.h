// Reference counting (DESIGN: memory is freed the moment the last reference goes).
#pragma once
#include <atomic>
#include <cstdint>
#include <utility>

namespace kindle {

// Base of reference-counted objects; T is the most derived type, deleted without a vtable.
template <typename T>
class RefCounted {
 public:
  int32_t use_count() const { return refcount_.load(std::memory_order_relaxed); }

 private:
  template <typename U> friend class intrusive_ptr;
  mutable std::atomic<int32_t> refcount_{0};
};

template <typename T>
class intrusive_ptr {
 public:
  intrusive_ptr() = default;
  explicit intrusive_ptr(T* p) : p_(p) { if (p_) retain(); }  // p may already be shared
  intrusive_ptr(const intrusive_ptr& o) : p_(o.p_) { if (p_) retain(); }
  intrusive_ptr(intrusive_ptr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  intrusive_ptr& operator=(const intrusive_ptr& o) {
    intrusive_ptr(o).swap(*this);
    return *this;
  }
  intrusive_ptr& operator=(intrusive_ptr&& o) noexcept {
    intrusive_ptr(std::move(o)).swap(*this);
    return *this;
  }
  ~intrusive_ptr() { reset(); }

  template <typename... Args>
  static intrusive_ptr make(Args&&... args) { return intrusive_ptr(new T(std::forward<Args>(args)...)); }

  void reset() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
    p_ = nullptr;
  }
  void swap(intrusive_ptr& o) noexcept { std::swap(p_, o.p_); }
  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  bool unique() const { return p_ && p_->use_count() == 1; }
  friend bool operator==(const intrusive_ptr& a, const intrusive_ptr& b) { return a.p_ == b.p_; }

 private:
  void retain() { p_->refcount_.fetch_add(1, std::memory_order_relaxed); }
  T* p_ = nullptr;
};

}  // namespace kindle
