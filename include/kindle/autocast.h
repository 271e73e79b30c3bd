// CPU autocast (torch.autocast(device_type="cpu")): inside an enabled region, the ops of the
// lower-precision list run in the autocast dtype (bfloat16 or float16), those of the float32
// list in float32, and those of the promote list in their inputs' widest floating type. The
// generated Python bindings apply the policy an op's ops.yaml entry names (`autocast:`); the
// op's own body then runs with autocast off (as PyTorch excludes its autocast key), so a
// composite is cast once. Casts of leaf tensors that require grad (weights) are cached for the
// region. Off, the cost is one relaxed load per op.
#pragma once
#include <atomic>
#include <optional>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::autocast {

namespace detail {
extern std::atomic<int> enabled_threads;  // threads with CPU autocast on
bool thread_active();                     // on for this thread and not inside an autocast op
}  // namespace detail

inline bool active() { return detail::enabled_threads.load(std::memory_order_relaxed) > 0 && detail::thread_active(); }

bool is_enabled();  // this thread's CPU autocast state
void set_enabled(bool enabled);
DType get_dtype();
void set_dtype(DType dtype);  // kBFloat16 or kFloat16
void clear_cache();
void set_cache_enabled(bool enabled);

enum class Policy { Lower, Fp32, Promote };

// Inside one autocast op: nested ops see autocast off.
class Exclude {
 public:
  Exclude();
  ~Exclude();
  Exclude(const Exclude&) = delete;
  Exclude& operator=(const Exclude&) = delete;

 private:
  bool prev_;
};

Tensor cast(Policy p, const Tensor& t);
std::optional<Tensor> cast(Policy p, const std::optional<Tensor>& t);
std::vector<Tensor> cast(Policy p, const std::vector<Tensor>& ts);
template <typename T>
const T& cast(Policy, const T& x) {
  return x;
}

// Runs f(args...) under `policy` when autocast is active: tensor arguments cast, the body excluded.
template <typename F, typename... Args>
decltype(auto) call(Policy policy, F&& f, const Args&... args) {
  if (!active()) return f(args...);
  Exclude exclude;
  return f(cast(policy, args)...);
}

}  // namespace kindle::autocast
