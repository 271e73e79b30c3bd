// The op profiler behind kindle.profiler (torch.profiler's API). While it runs, every op called
// through the Python bindings, every backward node the engine runs and every record_function
// range becomes an Event: name, start and end (steady clock, ns), thread, and on request the
// inputs' shapes and dtypes, the bytes allocated and freed inside, and the Python stack. Off, the
// cost is one relaxed load per op.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::profiler {

namespace detail {
extern std::atomic<bool> on;
extern std::atomic<bool> memory_on;
extern bool record_shapes;
}  // namespace detail

inline bool active() { return detail::on.load(std::memory_order_relaxed); }

// Module: an nn.Module's forward (profile(with_modules=True)); shown in traces, not in key_averages.
enum class EventKind : uint8_t { Op, Backward, User, Module };

struct Event {
  std::string name;
  EventKind kind = EventKind::Op;
  int64_t start_ns = 0, end_ns = 0;
  uint64_t thread = 0;            // small per-thread number (1: the first thread that recorded)
  std::string shapes, dtypes;     // "[[2, 3], []]" and "[float, Scalar]" with record_shapes
  std::string output_shape;       // "[2, 3]" with record_shapes, for ops returning one tensor (FLOP counts)
  int64_t alloc_bytes = 0, free_bytes = 0;  // with profile_memory: inside the event, children included
  std::string stack;              // with with_stack: the Python stack, outermost frame first
  uint64_t sequence = 0;          // start order
};

struct Config {
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
};

// Starts recording (RuntimeError if already running) / stops and returns the events in start order.
void start(const Config& config);
std::vector<Event> stop();
// Where the stack comes from (the Python front end installs a formatter of the Python stack).
void set_stack_provider(std::function<std::string()> provider);
// Called by the CPU allocator while memory is profiled: +bytes allocated, -bytes freed.
void record_memory(int64_t bytes);

// One event: recorded from construction to destruction when the profiler is on.
class Scope {
 public:
  Scope(std::string name, EventKind kind);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;
  void set_inputs(std::string shapes, std::string dtypes);
  void set_output(const Tensor& t);

 private:
  int64_t index_ = -1;  // in this thread's buffer; -1: not recording
};

// record_function's ranges (and modules' forwards), which Python opens and closes explicitly.
uint64_t begin_range(const std::string& name, EventKind kind = EventKind::User);
void end_range(uint64_t id);

// Shapes and dtypes of an op's arguments, as torch's "Input Shapes" column writes them.
void describe(std::string& shapes, std::string& dtypes, const Tensor& t);
void describe(std::string& shapes, std::string& dtypes, const std::optional<Tensor>& t);
void describe(std::string& shapes, std::string& dtypes, TensorList ts);
inline void describe(std::string& shapes, std::string& dtypes, const std::vector<Tensor>& ts) {
  describe(shapes, dtypes, TensorList(ts));
}
template <typename T>
void describe(std::string& shapes, std::string& dtypes, const T&) {
  shapes += "[]";
  dtypes += "Scalar";
}

// Runs f() as the op `name` (the generated Python bindings call every op through this).
template <typename F, typename... Args>
decltype(auto) call(const char* name, F&& f, const Args&... args) {
  if (!active()) return f();
  Scope scope(name, EventKind::Op);
  if (detail::record_shapes) {
    std::string shapes = "[", dtypes = "[";
    bool first = true;
    auto one = [&](const auto& a) {
      if (!first) shapes += ", ", dtypes += ", ";
      first = false;
      describe(shapes, dtypes, a);
    };
    (one(args), ...);
    scope.set_inputs(shapes + "]", dtypes + "]");
    if constexpr (std::is_same_v<std::decay_t<decltype(f())>, Tensor>) {
      decltype(auto) result = f();
      scope.set_output(result);
      return result;
    }
  }
  return f();
}

}  // namespace kindle::profiler
