// The engine-independent half of a process group: argument checks (torch's messages), the
// worker thread that runs collectives in issue order, the shapes of each collective reduced to
// what an engine provides (flat contiguous buffers), and failure reports: when a collective fails
// or times out, the ranks still alive say how far they got through the store, and the store says
// which processes have exited, so the error names the missing ranks instead of hanging.
#include <algorithm>
#include <deque>
#include <sstream>
#include <thread>

#include "kindle/autograd.h"
#include "kindle/distributed.h"
#include "kindle/ops.h"

namespace kindle::distributed {

using Clock = std::chrono::steady_clock;

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "SUM";
    case ReduceOp::Avg: return "AVG";
    case ReduceOp::Product: return "PRODUCT";
    case ReduceOp::Min: return "MIN";
    case ReduceOp::Max: return "MAX";
    case ReduceOp::BAnd: return "BAND";
    case ReduceOp::BOr: return "BOR";
    case ReduceOp::BXor: return "BXOR";
  }
  return "?";
}

// ---------------------------------------------------------------------------------------------
bool Work::is_completed() const {
  std::lock_guard<std::mutex> g(mu_);
  return done_;
}
bool Work::is_success() const {
  std::lock_guard<std::mutex> g(mu_);
  return done_ && !error_;
}
std::exception_ptr Work::exception() const {
  std::lock_guard<std::mutex> g(mu_);
  return error_;
}
void Work::finish(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> g(mu_);
    done_ = true;
    error_ = error;
  }
  cv_.notify_all();
}
bool Work::wait(std::optional<Duration> timeout) {
  std::unique_lock<std::mutex> l(mu_);
  if (timeout) {
    if (!cv_.wait_for(l, *timeout, [&] { return done_; })) return false;
  } else {
    cv_.wait(l, [&] { return done_; });
  }
  if (error_) std::rethrow_exception(error_);
  return true;
}

// ---------------------------------------------------------------------------------------------
struct ProcessGroup::Job {
  std::string op;
  uint64_t seq = 0;
  std::vector<Tensor> args;  // described in debug checks
  std::function<void(Job&)> body;
  WorkPtr work;
};

struct ProcessGroup::Worker {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::shared_ptr<Job>> queue;
  bool stop = false;
  uint64_t issued = 0;
  std::thread thread;
};

ProcessGroup::ProcessGroup(std::shared_ptr<Store> store, int rank, int size, std::unique_ptr<Backend> backend,
                           ProcessGroupOptions options)
    : store_(std::move(store)), rank_(rank), size_(size), backend_(std::move(backend)),
      options_(std::move(options)), worker_(std::make_unique<Worker>()) {
  worker_->thread = std::thread([this] {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> l(worker_->mu);
        worker_->cv.wait(l, [&] { return worker_->stop || !worker_->queue.empty(); });
        if (worker_->queue.empty()) return;
        job = worker_->queue.front();
        worker_->queue.pop_front();
      }
      execute(*job);
    }
  });
}

ProcessGroup::~ProcessGroup() { shutdown(); }

void ProcessGroup::shutdown() {
  {
    std::lock_guard<std::mutex> g(worker_->mu);
    worker_->stop = true;
  }
  worker_->cv.notify_all();
  if (worker_->thread.joinable() && worker_->thread.get_id() != std::this_thread::get_id()) worker_->thread.join();
}

std::string ProcessGroup::backend_name() const { return backend_->name(); }

WorkPtr ProcessGroup::enqueue(std::string op, std::vector<Tensor> args, std::function<void(Job&)> body) {
  auto job = std::make_shared<Job>();
  job->op = std::move(op);
  job->args = std::move(args);
  job->body = std::move(body);
  job->work = std::make_shared<Work>();
  {
    std::lock_guard<std::mutex> g(worker_->mu);
    KINDLE_CHECK(!worker_->stop, job->op, ": the process group has been destroyed (destroy_process_group)");
    job->seq = ++worker_->issued;
    worker_->queue.push_back(job);
  }
  worker_->cv.notify_one();
  return job->work;
}

void ProcessGroup::execute(Job& job) {
  try {
    autograd::NoGradGuard no_grad;
    if (options_.debug_checks) debug_check(job);
    try {
      job.body(job);
    } catch (const DistError&) {
      throw;
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      raise_failure(job, e.what());
    }
    job.work->finish();
  } catch (...) {
    job.work->finish(std::current_exception());
  }
}

std::string ProcessGroup::describe_rank(int r) const {
  std::string s = std::to_string(r);
  if (!options_.global_ranks.empty() && size_t(r) < options_.global_ranks.size() && options_.global_ranks[r] != r)
    s += " (global rank " + std::to_string(options_.global_ranks[r]) + ")";
  return s;
}

void ProcessGroup::raise_failure(const Job& job, const std::string& what) {
  bool timed_out = what.find("imed out") != std::string::npos || what.find("imeout") != std::string::npos;
  std::ostringstream os;
  os << job.op << " (collective #" << job.seq << " of process group '" << options_.group_name << "') failed on rank "
     << describe_rank(rank_) << ": " << what;
  // Who is missing: ranks whose processes exited (the store saw their connection close), and
  // ranks that did not report reaching this collective within a short grace period.
  try {
    std::string key = "__kindle_failed/" + options_.group_name + "/" + std::to_string(job.seq) + "/";
    store_->set(key + std::to_string(rank_), job.op);
    std::vector<int> departed_global = store_->departed_ranks();
    auto global = [&](int r) { return options_.global_ranks.empty() ? r : options_.global_ranks[size_t(r)]; };
    std::vector<int> gone, silent;
    auto deadline = Clock::now() + std::min(options_.timeout, Duration(2000));
    for (;;) {
      gone.clear();
      silent.clear();
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        if (store_->check({key + std::to_string(r)})) continue;  // it failed here too
        if (std::count(departed_global.begin(), departed_global.end(), global(r))) gone.push_back(r);
        else silent.push_back(r);
      }
      if (silent.empty() || Clock::now() >= deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      departed_global = store_->departed_ranks();
    }
    auto list = [&](const std::vector<int>& rs) {
      std::string s;
      for (size_t i = 0; i < rs.size(); ++i) s += (i ? ", " : "") + describe_rank(rs[i]);
      return s;
    };
    if (!gone.empty()) os << ". Ranks that exited: [" << list(gone) << "]";
    if (!silent.empty())
      os << ". Ranks that did not reach this " << job.op << " within the timeout of " << options_.timeout.count()
         << " ms: [" << list(silent) << "]";
    if (gone.empty() && silent.empty()) os << ". Every other rank reached this collective and failed too";
  } catch (const std::exception& e) {
    os << ". (The store could not be asked which ranks are missing: " << e.what() << ")";
  }
  if (timed_out) throw DistTimeoutError(os.str());
  throw DistError(os.str());
}

// TORCH_DISTRIBUTED_DEBUG=DETAIL: the ranks compare what they are about to run before running it.
void ProcessGroup::debug_check(const Job& job) {
  std::ostringstream fp;
  fp << job.op;
  for (const Tensor& t : job.args)
    if (t.defined()) fp << " " << dtype_name(t.dtype()) << t.sizes();
  std::string mine = fp.str();
  constexpr size_t kLen = 512;
  mine.resize(std::min(mine.size(), kLen - 1));
  Tensor in = zeros({int64_t(kLen)}, kUInt8), out = empty({int64_t(kLen) * size_}, kUInt8);
  std::memcpy(in.data_ptr(), mine.data(), mine.size());
  try {
    backend_->all_gather(out, in);
  } catch (const std::exception& e) {
    raise_failure(job, std::string("the debug check before it failed: ") + e.what());
  }
  const char* all = static_cast<const char*>(out.data_ptr());
  for (int r = 0; r < size_; ++r) {
    std::string theirs(all + size_t(r) * kLen);
    if (theirs != mine)
      throw DistError("Detected mismatch between collectives on ranks. Rank " + describe_rank(rank_) +
                      " is running collective #" + std::to_string(job.seq) + ": " + mine + ", but rank " +
                      describe_rank(r) + " is running: " + theirs);
  }
}

// ---------------------------------------------------------------------------------------------
namespace {

void check_tensor(const char* op, const Tensor& t, const char* what = "tensor") {
  KINDLE_CHECK(t.defined(), op, ": the ", what, " is None");
  KINDLE_CHECK(t.device().is_cpu(), op, ": the ", what, " is on ", t.device(), "; the gloo backend takes CPU tensors");
}

void check_reduce_op(const char* op, const Tensor& t, ReduceOp r) {
  DType dt = t.dtype();
  bool floating = is_floating_point(dt) || is_complex(dt);
  if (r == ReduceOp::Avg)
    KINDLE_CHECK_VALUE(floating, op, ": ReduceOp.AVG needs a floating point or complex tensor, got ", dt);
  if (r == ReduceOp::BAnd || r == ReduceOp::BOr || r == ReduceOp::BXor)
    KINDLE_CHECK_VALUE(!floating, op, ": ReduceOp.", reduce_op_name(r), " needs an integer or bool tensor, got ", dt);
  if (r == ReduceOp::Min || r == ReduceOp::Max)
    KINDLE_CHECK_VALUE(!is_complex(dt), op, ": ReduceOp.", reduce_op_name(r), " is not defined for complex tensors (",
                       dt, ")");
}

void check_rank(const char* op, int r, int size, const char* what) {
  KINDLE_CHECK_VALUE(r >= 0 && r < size, op, ": ", what, " ", r, " is not a rank of the group (size ", size, ")");
}

// The tensor itself if it is contiguous; else a contiguous copy written back after the op.
Tensor dense(const Tensor& t) { return t.is_contiguous() ? t : t.contiguous(); }
void write_back(const Tensor& dst, const Tensor& buf) {
  if (!dst.is_same(buf)) dst.copy_(buf);
}

void check_same(const char* op, const Tensor& a, const Tensor& b, const char* what) {
  KINDLE_CHECK_TYPE(a.dtype() == b.dtype(), op, ": ", what, " has dtype ", b.dtype(), " but the input has dtype ",
                    a.dtype(), "; they must match");
  KINDLE_CHECK_VALUE(a.numel() == b.numel(), op, ": ", what, " has shape ", b.sizes(), " but the input has shape ",
                     a.sizes(), "; they must have as many elements");
}

}  // namespace

WorkPtr ProcessGroup::all_reduce(Tensor t, ReduceOp op) {
  check_tensor("all_reduce", t);
  check_reduce_op("all_reduce", t, op);
  return enqueue("all_reduce", {t}, [this, t, op](Job&) {
    Tensor buf = dense(t);
    backend_->all_reduce(buf, op == ReduceOp::Avg ? ReduceOp::Sum : op);
    if (op == ReduceOp::Avg) buf.div_(scalar_tensor_of(size_, buf.dtype()));
    write_back(t, buf);
  });
}

WorkPtr ProcessGroup::all_reduce_coalesced(std::vector<Tensor> ts, ReduceOp op) {
  for (const Tensor& t : ts) {
    check_tensor("all_reduce_coalesced", t);
    check_reduce_op("all_reduce_coalesced", t, op);
    KINDLE_CHECK_TYPE(t.dtype() == ts[0].dtype(), "all_reduce_coalesced: tensors must all have the same dtype, got ",
                      ts[0].dtype(), " and ", t.dtype());
  }
  return enqueue("all_reduce_coalesced", ts, [this, ts, op](Job&) {
    if (ts.empty()) return;
    std::vector<Tensor> flat;
    for (const Tensor& t : ts) flat.push_back(t.reshape({-1}));
    Tensor buf = cat(flat);
    backend_->all_reduce(buf, op == ReduceOp::Avg ? ReduceOp::Sum : op);
    if (op == ReduceOp::Avg) buf.div_(scalar_tensor_of(size_, buf.dtype()));
    int64_t off = 0;
    for (const Tensor& t : ts) {
      t.copy_(buf.narrow(0, off, t.numel()).view(t.sizes()));
      off += t.numel();
    }
  });
}

WorkPtr ProcessGroup::broadcast(Tensor t, int root) {
  check_tensor("broadcast", t);
  check_rank("broadcast", root, size_, "src");
  return enqueue("broadcast", {t}, [this, t, root](Job&) {
    Tensor buf = dense(t);
    backend_->broadcast(buf, root);
    write_back(t, buf);
  });
}

WorkPtr ProcessGroup::reduce(Tensor t, int root, ReduceOp op) {
  check_tensor("reduce", t);
  check_rank("reduce", root, size_, "dst");
  check_reduce_op("reduce", t, op);
  return enqueue("reduce", {t}, [this, t, root, op](Job&) {
    Tensor buf = dense(t);
    backend_->reduce(buf, root, op == ReduceOp::Avg ? ReduceOp::Sum : op);
    if (rank_ == root) {
      if (op == ReduceOp::Avg) buf.div_(scalar_tensor_of(size_, buf.dtype()));
      write_back(t, buf);
    }
  });
}

WorkPtr ProcessGroup::all_gather(std::vector<Tensor> outputs, Tensor input) {
  check_tensor("all_gather", input);
  KINDLE_CHECK_VALUE(int(outputs.size()) == size_, "all_gather: tensor_list has ", outputs.size(),
                     " tensors; it must have one per rank of the group (", size_, ")");
  for (const Tensor& o : outputs) {
    check_tensor("all_gather", o, "output tensor");
    check_same("all_gather", input, o, "an output tensor");
  }
  std::vector<Tensor> args = outputs;
  args.push_back(input);
  return enqueue("all_gather", {input}, [this, outputs, input](Job&) {
    Tensor out = empty({input.numel() * size_}, input.dtype());
    backend_->all_gather(out, dense(input));
    for (int r = 0; r < size_; ++r) outputs[r].copy_(out.narrow(0, r * input.numel(), input.numel()).view(outputs[r].sizes()));
  });
}

WorkPtr ProcessGroup::all_gather_into_tensor(Tensor output, Tensor input) {
  check_tensor("all_gather_into_tensor", input);
  check_tensor("all_gather_into_tensor", output, "output tensor");
  KINDLE_CHECK_TYPE(output.dtype() == input.dtype(), "all_gather_into_tensor: the output has dtype ", output.dtype(),
                    " but the input has dtype ", input.dtype());
  KINDLE_CHECK_VALUE(output.numel() == input.numel() * size_, "all_gather_into_tensor: the output (shape ",
                     output.sizes(), ") must have world_size (", size_, ") times the input's elements (shape ",
                     input.sizes(), ")");
  return enqueue("all_gather_into_tensor", {input}, [this, output, input](Job&) {
    Tensor buf = dense(output);
    backend_->all_gather(buf, dense(input));
    write_back(output, buf);
  });
}

WorkPtr ProcessGroup::gather(std::vector<Tensor> outputs, Tensor input, int root) {
  check_tensor("gather", input);
  check_rank("gather", root, size_, "dst");
  if (rank_ == root) {
    KINDLE_CHECK_VALUE(int(outputs.size()) == size_, "gather: gather_list has ", outputs.size(),
                       " tensors on the destination rank; it must have one per rank (", size_, ")");
    for (const Tensor& o : outputs) check_same("gather", input, o, "a gather_list tensor");
  } else {
    KINDLE_CHECK_VALUE(outputs.empty(), "gather: gather_list must be empty on a rank that is not the destination (",
                       "rank ", rank_, ", dst ", root, ")");
  }
  return enqueue("gather", {input}, [this, outputs, input, root](Job&) {
    if (rank_ == root) {
      Tensor out = empty({input.numel() * size_}, input.dtype());
      backend_->gather(&out, dense(input), root);
      for (int r = 0; r < size_; ++r) outputs[r].copy_(out.narrow(0, r * input.numel(), input.numel()).view(outputs[r].sizes()));
    } else {
      backend_->gather(nullptr, dense(input), root);
    }
  });
}

WorkPtr ProcessGroup::scatter(Tensor output, std::vector<Tensor> inputs, int root) {
  check_tensor("scatter", output);
  check_rank("scatter", root, size_, "src");
  if (rank_ == root) {
    KINDLE_CHECK_VALUE(int(inputs.size()) == size_, "scatter: scatter_list has ", inputs.size(),
                       " tensors on the source rank; it must have one per rank (", size_, ")");
    for (const Tensor& i : inputs) check_same("scatter", output, i, "a scatter_list tensor");
  } else {
    KINDLE_CHECK_VALUE(inputs.empty(), "scatter: scatter_list must be empty on a rank that is not the source (rank ",
                       rank_, ", src ", root, ")");
  }
  return enqueue("scatter", {output}, [this, output, inputs, root](Job&) {
    Tensor buf = dense(output);
    if (rank_ == root) {
      std::vector<Tensor> flat;
      for (const Tensor& i : inputs) flat.push_back(i.reshape({-1}));
      Tensor in = cat(flat);
      backend_->scatter(buf, &in, root);
    } else {
      backend_->scatter(buf, nullptr, root);
    }
    write_back(output, buf);
  });
}

// Reduce-scatter is an all-reduce of the whole input, each rank keeping its share: Gloo's
// collectives API has no reduce-scatter (torch's gloo backend does the same).
WorkPtr ProcessGroup::reduce_scatter(Tensor output, std::vector<Tensor> inputs, ReduceOp op) {
  check_tensor("reduce_scatter", output);
  check_reduce_op("reduce_scatter", output, op);
  KINDLE_CHECK_VALUE(int(inputs.size()) == size_, "reduce_scatter: input_list has ", inputs.size(),
                     " tensors; it must have one per rank (", size_, ")");
  for (const Tensor& i : inputs) check_same("reduce_scatter", output, i, "an input_list tensor");
  return enqueue("reduce_scatter", {output}, [this, output, inputs, op](Job&) {
    std::vector<Tensor> flat;
    for (const Tensor& i : inputs) flat.push_back(i.reshape({-1}));
    Tensor buf = cat(flat);
    backend_->all_reduce(buf, op == ReduceOp::Avg ? ReduceOp::Sum : op);
    Tensor mine = buf.narrow(0, rank_ * output.numel(), output.numel());
    if (op == ReduceOp::Avg) mine.div_(scalar_tensor_of(size_, mine.dtype()));
    output.copy_(mine.view(output.sizes()));
  });
}

WorkPtr ProcessGroup::reduce_scatter_tensor(Tensor output, Tensor input, ReduceOp op) {
  check_tensor("reduce_scatter_tensor", output);
  check_tensor("reduce_scatter_tensor", input);
  check_reduce_op("reduce_scatter_tensor", input, op);
  KINDLE_CHECK_TYPE(output.dtype() == input.dtype(), "reduce_scatter_tensor: the output has dtype ", output.dtype(),
                    " but the input has dtype ", input.dtype());
  KINDLE_CHECK_VALUE(input.numel() == output.numel() * size_, "reduce_scatter_tensor: the input (shape ",
                     input.sizes(), ") must have world_size (", size_, ") times the output's elements (shape ",
                     output.sizes(), ")");
  return enqueue("reduce_scatter_tensor", {input}, [this, output, input, op](Job&) {
    Tensor buf = input.contiguous().clone().reshape({-1});
    backend_->all_reduce(buf, op == ReduceOp::Avg ? ReduceOp::Sum : op);
    Tensor mine = buf.narrow(0, rank_ * output.numel(), output.numel());
    if (op == ReduceOp::Avg) mine.div_(scalar_tensor_of(size_, mine.dtype()));
    output.copy_(mine.view(output.sizes()));
  });
}

WorkPtr ProcessGroup::all_to_all(std::vector<Tensor> outputs, std::vector<Tensor> inputs) {
  KINDLE_CHECK_VALUE(int(outputs.size()) == size_ && int(inputs.size()) == size_, "all_to_all: output_tensor_list (",
                     outputs.size(), ") and input_tensor_list (", inputs.size(), ") must have one tensor per rank (",
                     size_, ")");
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_tensor("all_to_all", inputs[i]);
    check_tensor("all_to_all", outputs[i], "output tensor");
    KINDLE_CHECK_TYPE(inputs[i].dtype() == inputs[0].dtype() && outputs[i].dtype() == inputs[0].dtype(),
                      "all_to_all: every tensor must have the same dtype");
  }
  return enqueue("all_to_all", inputs, [this, outputs, inputs](Job&) {
    std::vector<Tensor> flat;
    std::vector<int64_t> in_counts, out_counts;
    int64_t out_total = 0;
    for (int r = 0; r < size_; ++r) {
      flat.push_back(inputs[r].reshape({-1}));
      in_counts.push_back(inputs[r].numel());
      out_counts.push_back(outputs[r].numel());
      out_total += outputs[r].numel();
    }
    Tensor in = cat(flat), out = empty({out_total}, in.dtype());
    backend_->all_to_all(out, in, out_counts, in_counts);
    int64_t off = 0;
    for (int r = 0; r < size_; ++r) {
      outputs[r].copy_(out.narrow(0, off, outputs[r].numel()).view(outputs[r].sizes()));
      off += outputs[r].numel();
    }
  });
}

WorkPtr ProcessGroup::all_to_all_single(Tensor output, Tensor input, std::vector<int64_t> output_splits,
                                        std::vector<int64_t> input_splits) {
  check_tensor("all_to_all_single", input);
  check_tensor("all_to_all_single", output, "output tensor");
  KINDLE_CHECK_TYPE(output.dtype() == input.dtype(), "all_to_all_single: the output has dtype ", output.dtype(),
                    " but the input has dtype ", input.dtype());
  auto counts = [&](const Tensor& t, std::vector<int64_t> splits, const char* name) {
    int64_t rows = t.dim() ? t.size(0) : 1, row = rows ? t.numel() / rows : 0;
    if (splits.empty()) {
      KINDLE_CHECK_VALUE(rows % size_ == 0, "all_to_all_single: without ", name, ", dim 0 of the tensor (", rows,
                         ") must divide by the world size (", size_, ")");
      splits.assign(size_t(size_), rows / size_);
    }
    KINDLE_CHECK_VALUE(int(splits.size()) == size_, "all_to_all_single: ", name, " has ", splits.size(),
                       " entries; it needs one per rank (", size_, ")");
    int64_t total = 0;
    for (int64_t& s : splits) {
      KINDLE_CHECK_VALUE(s >= 0, "all_to_all_single: ", name, " has a negative split ", s);
      total += s;
      s *= row;
    }
    KINDLE_CHECK_VALUE(total == rows, "all_to_all_single: ", name, " sums to ", total, " but dim 0 of the tensor is ",
                       rows);
    return splits;
  };
  std::vector<int64_t> out_counts = counts(output, output_splits, "output_split_sizes");
  std::vector<int64_t> in_counts = counts(input, input_splits, "input_split_sizes");
  return enqueue("all_to_all_single", {input}, [this, output, input, out_counts, in_counts](Job&) {
    Tensor buf = dense(output);
    backend_->all_to_all(buf, dense(input), out_counts, in_counts);
    write_back(output, buf);
  });
}

// Point-to-point messages do not wait for the worker (a receive blocking the queue would stall a
// send issued after it): each runs on a thread of its own, matched by (peer, tag).
namespace {
WorkPtr run_p2p(std::function<int()> body) {
  auto work = std::make_shared<Work>();
  std::thread([work, body = std::move(body)] {
    try {
      autograd::NoGradGuard no_grad;
      work->source_ = body();
      work->finish();
    } catch (...) {
      work->finish(std::current_exception());
    }
  }).detach();
  return work;
}
}  // namespace

WorkPtr ProcessGroup::send(Tensor t, int dst, int tag) {
  check_tensor("send", t);
  check_rank("send", dst, size_, "dst");
  KINDLE_CHECK_VALUE(dst != rank_, "send: dst ", dst, " is this process's own rank");
  Tensor buf = dense(t);
  auto self = shared_from_this();
  return run_p2p([self, buf, dst, tag] {
    try {
      self->backend_->send(buf, dst, tag);
    } catch (const std::exception& e) {
      Job job{"send", 0, {}, {}, nullptr};
      self->raise_failure(job, e.what());
    }
    return dst;
  });
}

WorkPtr ProcessGroup::recv(Tensor t, int src, int tag) {
  check_tensor("recv", t);
  if (src != -1) {
    check_rank("recv", src, size_, "src");
    KINDLE_CHECK_VALUE(src != rank_, "recv: src ", src, " is this process's own rank");
  }
  auto self = shared_from_this();
  return run_p2p([self, t, src, tag] {
    Tensor buf = dense(t);
    int from = -1;
    try {
      from = self->backend_->recv(buf, src, tag);
    } catch (const std::exception& e) {
      Job job{"recv", 0, {}, {}, nullptr};
      self->raise_failure(job, e.what());
    }
    write_back(t, buf);
    return from;
  });
}

WorkPtr ProcessGroup::barrier() {
  return enqueue("barrier", {}, [this](Job&) { backend_->barrier(); });
}

void ProcessGroup::monitored_barrier(std::optional<Duration> timeout, bool wait_all_ranks) {
  Duration t = timeout.value_or(options_.timeout);
  uint64_t n = 0;
  {
    std::lock_guard<std::mutex> g(worker_->mu);
    n = ++worker_->issued;  // a number of its own, so a later call uses fresh keys
  }
  std::string key = "__kindle_monitored/" + options_.group_name + "/" + std::to_string(n) + "/";
  if (rank_ != 0) {
    store_->set(key + "arrive/" + std::to_string(rank_), "1");
    try {
      store_->wait({key + "release"}, t);
    } catch (const DistTimeoutError&) {
      throw DistError("monitored_barrier: rank " + describe_rank(rank_) + " was not released by rank 0 within " +
                      std::to_string(t.count()) + " ms (rank 0 has not reached the barrier or has exited)");
    }
    return;
  }
  auto deadline = Clock::now() + t;
  std::vector<int> missing;
  for (int r = 1; r < size_; ++r) {
    auto left = std::chrono::duration_cast<Duration>(deadline - Clock::now());
    try {
      store_->wait({key + "arrive/" + std::to_string(r)}, std::max(left, Duration(1)));
    } catch (const DistTimeoutError&) {
      missing.push_back(r);
      if (!wait_all_ranks) break;
    }
  }
  if (!missing.empty()) {
    std::string s;
    for (size_t i = 0; i < missing.size(); ++i) s += (i ? ", " : "") + describe_rank(missing[i]);
    if (wait_all_ranks)
      throw DistError("monitored_barrier: ranks " + s + " failed to pass monitoredBarrier in " +
                      std::to_string(t.count()) + " ms");
    throw DistError("monitored_barrier: rank " + s + " failed to pass monitoredBarrier in " + std::to_string(t.count()) +
                    " ms");
  }
  store_->set(key + "release", "1");
}

}  // namespace kindle::distributed
