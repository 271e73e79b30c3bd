// The op profiler: per-thread event buffers, gathered at stop.
#include "kindle/profiler.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <sstream>

#include "kindle/error.h"

namespace kindle::profiler {

namespace detail {
std::atomic<bool> on{false};
std::atomic<bool> memory_on{false};
bool record_shapes = false;
}  // namespace detail

namespace {

struct ThreadBuffer {
  uint64_t thread = 0;
  std::vector<Event> events;
  int64_t allocated = 0, freed = 0;  // running totals of this thread's allocations and frees
  uint64_t generation = 0;           // of the recording these events belong to
};

std::mutex mu;
std::vector<std::shared_ptr<ThreadBuffer>> buffers;  // every thread that recorded
std::atomic<uint64_t> generation{0};  // of the running recording (read by every recording thread)
uint64_t next_thread = 1;
bool with_stack = false;
std::function<std::string()> stack_provider;
std::atomic<uint64_t> sequence{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ThreadBuffer& buffer() {
  thread_local std::shared_ptr<ThreadBuffer> mine;
  if (!mine) {
    mine = std::make_shared<ThreadBuffer>();
    std::lock_guard<std::mutex> lock(mu);
    mine->thread = next_thread++;
    mine->generation = generation.load();
    buffers.push_back(mine);
  }
  if (mine->generation != generation.load(std::memory_order_relaxed)) {  // a new recording: drop the old
    std::lock_guard<std::mutex> lock(mu);
    mine->events.clear();
    mine->generation = generation.load();
  }
  return *mine;
}

int64_t open_event(std::string name, EventKind kind) {
  ThreadBuffer& b = buffer();
  Event e;
  e.name = std::move(name);
  e.kind = kind;
  e.thread = b.thread;
  e.sequence = sequence.fetch_add(1, std::memory_order_relaxed);
  if (with_stack && stack_provider) e.stack = stack_provider();
  e.alloc_bytes = b.allocated;  // the totals at the start; the differences at the end
  e.free_bytes = b.freed;
  e.start_ns = now_ns();
  b.events.push_back(std::move(e));
  return int64_t(b.events.size() - 1);
}

void close_event(int64_t index) {
  int64_t t = now_ns();
  ThreadBuffer& b = buffer();
  if (index < 0 || size_t(index) >= b.events.size()) return;  // the recording ended meanwhile
  Event& e = b.events[size_t(index)];
  e.end_ns = t;
  e.alloc_bytes = b.allocated - e.alloc_bytes;
  e.free_bytes = b.freed - e.free_bytes;
}

}  // namespace

void start(const Config& config) {
  std::lock_guard<std::mutex> lock(mu);
  KINDLE_CHECK(!detail::on.load(), "profiler: a profiling session is already running (one at a time)");
  ++generation;
  for (auto& b : buffers) {
    b->events.clear();
    b->generation = generation.load();
  }
  detail::record_shapes = config.record_shapes;
  with_stack = config.with_stack;
  detail::memory_on.store(config.profile_memory, std::memory_order_relaxed);
  detail::on.store(true, std::memory_order_relaxed);
}

std::vector<Event> stop() {
  std::lock_guard<std::mutex> lock(mu);
  detail::on.store(false, std::memory_order_relaxed);
  detail::memory_on.store(false, std::memory_order_relaxed);
  std::vector<Event> all;
  for (auto& b : buffers) {
    if (b->generation != generation) continue;
    for (Event& e : b->events)
      if (e.end_ns) all.push_back(std::move(e));  // (an event still open at stop is dropped)
    b->events.clear();
  }
  ++generation;
  std::sort(all.begin(), all.end(), [](const Event& a, const Event& b) { return a.sequence < b.sequence; });
  return all;
}

void set_stack_provider(std::function<std::string()> provider) {
  std::lock_guard<std::mutex> lock(mu);
  stack_provider = std::move(provider);
}

void record_memory(int64_t bytes) {
  ThreadBuffer& b = buffer();
  if (bytes >= 0) b.allocated += bytes;
  else b.freed -= bytes;
}

Scope::Scope(std::string name, EventKind kind) {
  if (active()) index_ = open_event(std::move(name), kind);
}

Scope::~Scope() {
  if (index_ >= 0) close_event(index_);
}

void Scope::set_inputs(std::string shapes, std::string dtypes) {
  if (index_ < 0) return;
  ThreadBuffer& b = buffer();
  if (size_t(index_) < b.events.size()) {
    b.events[size_t(index_)].shapes = std::move(shapes);
    b.events[size_t(index_)].dtypes = std::move(dtypes);
  }
}

uint64_t begin_range(const std::string& name, EventKind kind) {
  if (!active()) return 0;
  return uint64_t(open_event(name, kind)) + 1;
}

void end_range(uint64_t id) {
  if (id) close_event(int64_t(id - 1));
}

void Scope::set_output(const Tensor& t) {
  if (index_ < 0) return;
  ThreadBuffer& b = buffer();
  if (size_t(index_) < b.events.size()) {
    std::string dtype;
    describe(b.events[size_t(index_)].output_shape, dtype, t);
  }
}

void describe(std::string& shapes, std::string& dtypes, const Tensor& t) {
  if (!t.defined()) {
    shapes += "[]";
    dtypes += "";
    return;
  }
  std::ostringstream s;
  s << "[";
  for (int64_t i = 0; i < t.dim(); ++i) s << (i ? ", " : "") << t.sizes()[size_t(i)];
  s << "]";
  shapes += s.str();
  dtypes += dtype_name(t.dtype());
}

void describe(std::string& shapes, std::string& dtypes, const std::optional<Tensor>& t) {
  if (t) describe(shapes, dtypes, *t);
  else shapes += "[]";
}

void describe(std::string& shapes, std::string& dtypes, TensorList ts) {
  shapes += "[";
  for (size_t i = 0; i < ts.size(); ++i) {
    std::string d;
    if (i) shapes += ", ";
    describe(shapes, d, ts[i]);
  }
  shapes += "]";
  dtypes += "TensorList";
}

}  // namespace kindle::profiler
