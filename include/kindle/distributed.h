// Distributed training (torch.distributed's model): processes meet through a key-value Store
// (TCP or a shared file), form a ProcessGroup and run collectives on tensors. The collectives
// themselves are Gloo's (PyTorch's own CPU engine, over TCP); Kindle adds the store, the ordered
// asynchronous execution (one worker thread per group: every rank issues the same collectives in
// the same order), and failure reports that name the ranks that died or never arrived.
// Backends are behind ProcessGroup, so an NCCL group for the CUDA backend plugs in beside Gloo.
#pragma once
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kindle/tensor.h"

namespace kindle::distributed {

using Duration = std::chrono::milliseconds;
inline constexpr Duration kDefaultTimeout{std::chrono::minutes(30)};

// A collective that failed or timed out: what happened, on which collective, which ranks are missing.
class DistError : public Error { public: using Error::Error; };
class DistTimeoutError : public DistError { public: using DistError::DistError; };

// ---------------------------------------------------------------------------------------------
// Stores: where the ranks exchange addresses and small values (torch.distributed.Store's API).
class Store {
 public:
  virtual ~Store() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  // Waits (up to the store's timeout) for the key, then returns its value.
  virtual std::string get(const std::string& key) = 0;
  virtual int64_t add(const std::string& key, int64_t amount) = 0;
  // Sets `desired` if the key holds `expected` (or is absent and expected is empty); returns the value now.
  virtual std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) = 0;
  virtual bool check(const std::vector<std::string>& keys) = 0;
  virtual void wait(const std::vector<std::string>& keys, std::optional<Duration> timeout = std::nullopt) = 0;
  virtual bool delete_key(const std::string& key) = 0;
  virtual int64_t num_keys() = 0;
  // Ranks whose processes were seen to exit (their connection closed) — empty where unknown.
  virtual std::vector<int> departed_ranks() { return {}; }
  // Tells the store which rank this client is, so its departure can be reported.
  virtual void register_rank(int /*rank*/) {}
  Duration timeout() const { return timeout_; }
  void set_timeout(Duration t) { timeout_ = t; }

 protected:
  Duration timeout_ = std::chrono::minutes(5);
};

// A store served over TCP by one process (is_master) and reached by all the others.
class TCPStore : public Store {
 public:
  // port 0 with is_master: an ephemeral port (see port()). wait_for_workers: the master waits
  // until world_size clients (itself included) have connected.
  TCPStore(std::string host, int port, std::optional<int> world_size = std::nullopt, bool is_master = false,
           Duration timeout = std::chrono::minutes(5), bool wait_for_workers = true);
  ~TCPStore() override;
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::optional<Duration> timeout = std::nullopt) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<int> departed_ranks() override;
  void register_rank(int rank) override;
  int port() const;
  const std::string& host() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A store in one file (on a file system every rank sees), for init_method="file://...".
class FileStore : public Store {
 public:
  FileStore(std::string path, int world_size = -1, Duration timeout = std::chrono::minutes(5));
  ~FileStore() override;
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::optional<Duration> timeout = std::nullopt) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Every key of `base` under "prefix/" (one namespace per process group).
class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, std::shared_ptr<Store> base);
  void set(const std::string& key, const std::string& value) override;
  std::string get(const std::string& key) override;
  int64_t add(const std::string& key, int64_t amount) override;
  std::string compare_set(const std::string& key, const std::string& expected, const std::string& desired) override;
  bool check(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, std::optional<Duration> timeout = std::nullopt) override;
  bool delete_key(const std::string& key) override;
  int64_t num_keys() override;
  std::vector<int> departed_ranks() override { return base_->departed_ranks(); }
  const std::shared_ptr<Store>& underlying() const { return base_; }

 private:
  std::string k(const std::string& key) const { return prefix_ + "/" + key; }
  std::string prefix_;
  std::shared_ptr<Store> base_;
};

// ---------------------------------------------------------------------------------------------
enum class ReduceOp : uint8_t { Sum, Avg, Product, Min, Max, BAnd, BOr, BXor };
const char* reduce_op_name(ReduceOp op);

// An issued collective. wait() blocks until it is done and rethrows its failure.
class Work {
 public:
  bool is_completed() const;
  bool is_success() const;
  std::exception_ptr exception() const;
  // false if the timeout passed first (the collective keeps running); throws the collective's error.
  bool wait(std::optional<Duration> timeout = std::nullopt);
  // recv from any rank: the rank the message came from (after wait).
  int source() const { return source_; }

  // For the process group's worker.
  void finish(std::exception_ptr error = nullptr);
  int source_ = -1;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};
using WorkPtr = std::shared_ptr<Work>;

struct ProcessGroupOptions {
  Duration timeout = kDefaultTimeout;
  // Before each collective, the ranks compare what they are about to run (op, dtype, shapes) and
  // raise on a mismatch instead of computing garbage or hanging (TORCH_DISTRIBUTED_DEBUG=DETAIL).
  bool debug_checks = false;
  std::string group_name = "default";
  std::vector<int> global_ranks;  // this group's members as ranks of the world (empty: the world)
};

// What a collective engine provides. Every call runs on the group's worker thread, on contiguous
// tensors; counts are in elements. Failures throw (the group turns them into DistError naming
// the missing ranks).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  virtual void all_reduce(Tensor& t, ReduceOp op) = 0;  // op is never Avg here
  virtual void reduce(Tensor& t, int root, ReduceOp op) = 0;
  virtual void broadcast(Tensor& t, int root) = 0;
  virtual void all_gather(Tensor& out, const Tensor& in) = 0;  // out: size * in, rank-major
  virtual void gather(Tensor* out, const Tensor& in, int root) = 0;  // out only on root
  virtual void scatter(Tensor& out, const Tensor* in, int root) = 0;  // in only on root
  virtual void all_to_all(Tensor& out, const Tensor& in, const std::vector<int64_t>& out_counts,
                          const std::vector<int64_t>& in_counts) = 0;
  virtual void send(const Tensor& t, int dst, int tag) = 0;
  virtual int recv(Tensor& t, int src, int tag) = 0;  // src -1: any; returns the source
  virtual void barrier() = 0;
};

// A group of processes that run collectives together. Every call is issued to the group's worker
// thread and runs there in order (every rank issues the same collectives in the same order); the
// returned Work completes when it is done. Contiguous tensors are used in place, without a copy;
// a caller must not touch them before wait().
class ProcessGroup : public std::enable_shared_from_this<ProcessGroup> {
 public:
  ProcessGroup(std::shared_ptr<Store> store, int rank, int size, std::unique_ptr<Backend> backend,
               ProcessGroupOptions options);
  ~ProcessGroup();
  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string backend_name() const;
  const ProcessGroupOptions& options() const { return options_; }
  const std::shared_ptr<Store>& store() const { return store_; }

  WorkPtr all_reduce(Tensor t, ReduceOp op = ReduceOp::Sum);
  // One reduction of several tensors (flattened per dtype), as a gradient bucket does.
  WorkPtr all_reduce_coalesced(std::vector<Tensor> ts, ReduceOp op = ReduceOp::Sum);
  WorkPtr broadcast(Tensor t, int root);
  WorkPtr reduce(Tensor t, int root, ReduceOp op = ReduceOp::Sum);
  WorkPtr all_gather(std::vector<Tensor> outputs, Tensor input);
  WorkPtr all_gather_into_tensor(Tensor output, Tensor input);
  WorkPtr gather(std::vector<Tensor> outputs, Tensor input, int root);  // outputs only on root
  WorkPtr scatter(Tensor output, std::vector<Tensor> inputs, int root);  // inputs only on root
  WorkPtr reduce_scatter(Tensor output, std::vector<Tensor> inputs, ReduceOp op = ReduceOp::Sum);
  WorkPtr reduce_scatter_tensor(Tensor output, Tensor input, ReduceOp op = ReduceOp::Sum);
  WorkPtr all_to_all(std::vector<Tensor> outputs, std::vector<Tensor> inputs);
  WorkPtr all_to_all_single(Tensor output, Tensor input, std::vector<int64_t> output_splits = {},
                            std::vector<int64_t> input_splits = {});
  WorkPtr send(Tensor t, int dst, int tag = 0);
  WorkPtr recv(Tensor t, int src = -1, int tag = 0);  // Work::source() tells where it came from
  WorkPtr barrier();
  // A barrier whose failure names every rank that did not arrive (rank 0 collects the others).
  void monitored_barrier(std::optional<Duration> timeout = std::nullopt, bool wait_all_ranks = false);
  // Waits for everything issued, then stops the worker; later calls raise.
  void shutdown();

  struct Job;

 private:
  WorkPtr enqueue(std::string op, std::vector<Tensor> args, std::function<void(Job&)> body);
  void execute(Job& job);
  void debug_check(const Job& job);
  [[noreturn]] void raise_failure(const Job& job, const std::string& what);
  std::string describe_rank(int r) const;

  std::shared_ptr<Store> store_;
  int rank_, size_;
  std::unique_ptr<Backend> backend_;
  ProcessGroupOptions options_;
  struct Worker;
  std::unique_ptr<Worker> worker_;
};
using ProcessGroupPtr = std::shared_ptr<ProcessGroup>;

// Whether this build has the Gloo engine (the CPU backend).
bool gloo_available();
// A Gloo process group of `size` ranks meeting through `store` (TimeoutError/DistError naming
// the missing ranks if they do not all arrive within options.timeout).
ProcessGroupPtr new_gloo_group(std::shared_ptr<Store> store, int rank, int size, ProcessGroupOptions options = {});

// The default group from torchrun's environment (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE):
// what init_process_group("gloo") does in Python, for C++ programs run under the launcher.
ProcessGroupPtr init_from_env(Duration timeout = kDefaultTimeout);

// ---------------------------------------------------------------------------------------------
// DistributedDataParallel's gradient reducer: parameters are grouped into buckets (reverse
// registration order, about bucket_cap_mb each, one dtype per bucket); when autograd has
// accumulated the gradient of every parameter of a bucket, the bucket is averaged across the
// group asynchronously while backward goes on; the end of backward waits for the buckets and
// writes the averages into .grad.
struct ReducerOptions {
  double bucket_cap_mb = 25.0;
  double first_bucket_cap_mb = 1.0;  // a small first bucket starts communication early
  bool find_unused_parameters = false;
  bool gradient_as_bucket_view = false;
};

class Reducer {
 public:
  Reducer(std::vector<Tensor> parameters, ProcessGroupPtr group, ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;
  // Off (no_sync): gradients accumulate locally and nothing is communicated.
  void set_sync(bool on) { sync_ = on; }
  bool sync() const { return sync_; }
  // Called at each forward (checks that the previous reduction finished).
  void prepare_for_forward();
  // Parameters with no gradient in the last backward (find_unused_parameters), by index.
  const std::vector<int64_t>& unused_parameters() const { return unused_; }
  std::vector<std::vector<int64_t>> bucket_indices() const;
  // Seconds the last backward's end spent waiting for communication (exposed communication).
  double last_wait_seconds() const { return last_wait_s_; }
  // Replaces "divide by the world size, all-reduce" for each full bucket: the hook gets the bucket's
  // index and flat gradients and returns what waits for and yields the reduced bucket (DDP's
  // register_comm_hook). Called in bucket order, during backward.
  using CommHook = std::function<std::function<Tensor()>(size_t index, const Tensor& bucket)>;
  void set_comm_hook(CommHook hook);
  // For a rank whose inputs ran out (DDP's join): zeros into every bucket, reduced as the others do.
  void join_step();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  bool sync_ = true;
  std::vector<int64_t> unused_;
  double last_wait_s_ = 0;
  friend struct Impl;
};

// Sends parameters and buffers of rank 0 to every rank (flattened per dtype).
void broadcast_coalesced(const ProcessGroupPtr& group, std::vector<Tensor> tensors, int root = 0,
                         double buffer_mb = 250.0);

}  // namespace kindle::distributed
