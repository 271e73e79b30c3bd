// kindle::data: datasets, a DataLoader with batching, seeded shuffling, drop_last and worker
// threads, and a reader for MNIST's IDX files.
//
//   auto train = data::MNIST("mnist/", data::MNIST::Mode::kTrain);
//   data::DataLoader loader(std::move(train), data::DataLoaderOptions(64).shuffle(true).seed(0).num_workers(2));
//   for (auto& batch : loader) { ... batch.data ... batch.target ... }   // one epoch
//
// Batches arrive in order whatever the number of workers; a worker's exception is rethrown by the
// loop at the batch it was building. Datasets are read with grad mode off.
#pragma once
#include <atomic>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kindle/autograd.h"
#include "kindle/nn/options.h"
#include "kindle/ops.h"

namespace kindle::data {

// An input and its label; a batch is the same struct with both stacked along a new first dim.
struct Example {
  Tensor data, target;
};

// Stacks examples into a batch (overload collate for your own example type).
Example collate(const std::vector<Example>& examples);
Tensor collate(const std::vector<Tensor>& examples);

// A random-access dataset. get_batch defaults to get() for each index, then collate().
template <typename E = Example>
class Dataset {
 public:
  using ExampleType = E;
  virtual ~Dataset() = default;
  virtual E get(size_t index) = 0;
  virtual size_t size() const = 0;
  virtual E get_batch(const std::vector<size_t>& indices) {
    std::vector<E> items;
    items.reserve(indices.size());
    for (size_t i : indices) items.push_back(get(i));
    return collate(items);
  }
};

// Examples are rows of two tensors with the same first dimension (ValueError otherwise);
// batches are taken with one index_select per tensor.
class TensorDataset : public Dataset<Example> {
 public:
  TensorDataset(Tensor data, Tensor target);
  Example get(size_t index) override;
  size_t size() const override { return size_t(data_.size(0)); }
  Example get_batch(const std::vector<size_t>& indices) override;
  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_, target_;
};

// ---- IDX files (MNIST's format)

// Reads an IDX file (uint8, int8, int16, int32, float32 or float64 payload; big-endian) into a
// tensor of its dtype and shape. ValueError naming the file for anything malformed: bad magic,
// unknown type, sizes that do not match the file's length.
Tensor read_idx(const std::string& path);
// Writes a uint8 tensor as an IDX file (used by tests and the digits exporter's C++ twin).
void write_idx(const Tensor& t, const std::string& path);

// MNIST from a folder holding train-images-idx3-ubyte, train-labels-idx1-ubyte,
// t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte (uncompressed): images float32 (N, 1, H, W)
// scaled to [0, 1], labels int64.
class MNIST : public TensorDataset {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  static Example read(const std::string& images_path, const std::string& labels_path);

 private:
  explicit MNIST(Example e) : TensorDataset(e.data, e.target) {}
};

// ---- DataLoader

struct DataLoaderOptions {
  DataLoaderOptions(int64_t batch_size = 1) : batch_size_(batch_size) {}
  KINDLE_ARG(int64_t, batch_size);
  KINDLE_ARG(bool, shuffle) = false;
  KINDLE_ARG(bool, drop_last) = false;
  // 0: batches are built by the loop's thread; n: by n worker threads, in order.
  KINDLE_ARG(int64_t, num_workers) = 0;
  // Batches each worker may build ahead of the loop.
  KINDLE_ARG(int64_t, prefetch_factor) = 2;
  // The shuffling seed: the same seed gives the same order of batches, epoch after epoch.
  // Unset: drawn from kindle's default generator (so kindle::manual_seed fixes it too).
  KINDLE_ARG(std::optional<uint64_t>, seed);
};

namespace detail {
void check_loader_options(const DataLoaderOptions& o);
// The batches of one epoch: a permutation (drawn from gen) or 0..n-1, cut in batch_size pieces.
std::vector<std::vector<size_t>> epoch_batches(size_t n, const DataLoaderOptions& o, Generator& gen);
}  // namespace detail

template <typename E = Example>
class DataLoader {
 public:
  DataLoader(std::shared_ptr<Dataset<E>> dataset, DataLoaderOptions options = {})
      : dataset_(std::move(dataset)), options_(std::move(options)) {
    detail::check_loader_options(options_);
    uint64_t s = options_.seed() ? *options_.seed() : uint64_t(randint(0, INT64_MAX, {}).template item<int64_t>());
    gen_ = Generator(s);
  }
  // Takes a dataset by value (moved, or copied: datasets of tensors share them, so copies are cheap).
  template <typename D, typename = std::enable_if_t<std::is_base_of_v<Dataset<E>, std::decay_t<D>>>>
  DataLoader(D&& dataset, DataLoaderOptions options = {})
      : DataLoader(std::shared_ptr<Dataset<E>>(std::make_shared<std::decay_t<D>>(std::forward<D>(dataset))),
                   std::move(options)) {}

  // Batches per epoch.
  size_t size() const {
    size_t n = dataset_->size(), b = size_t(options_.batch_size());
    return options_.drop_last() ? n / b : (n + b - 1) / b;
  }
  Dataset<E>& dataset() { return *dataset_; }
  const DataLoaderOptions& options() const { return options_; }

  class Iterator;
  // Starts an epoch (a new shuffle). Ending the loop early stops and joins the workers.
  Iterator begin() { return Iterator(std::make_shared<Epoch>(dataset_, options_, gen_)); }
  Iterator end() { return Iterator(); }

 private:
  // One pass over the data; with workers, the threads fill slots in a window ahead of the loop.
  struct Epoch {
    Epoch(std::shared_ptr<Dataset<E>> ds, const DataLoaderOptions& o, Generator& gen)
        : dataset(std::move(ds)), batches(detail::epoch_batches(dataset->size(), o, gen)),
          slots(batches.size()), errors(batches.size()), ready(batches.size(), 0),
          window(size_t(o.num_workers() * o.prefetch_factor())) {
      for (int64_t w = 0; w < o.num_workers(); ++w) workers.emplace_back([this] { work(); });
    }
    ~Epoch() {
      {
        std::lock_guard<std::mutex> g(mu);
        stop = true;
      }
      cv_work.notify_all();
      for (auto& t : workers) t.join();
    }
    void work() {
      autograd::NoGradGuard no_grad;
      while (true) {
        size_t i;
        {
          std::unique_lock<std::mutex> g(mu);
          cv_work.wait(g, [&] { return stop || (next < batches.size() && next < consumed + window); });
          if (stop) return;
          i = next++;
        }
        E batch;
        std::exception_ptr err;
        try {
          batch = dataset->get_batch(batches[i]);
        } catch (...) {
          err = std::current_exception();
        }
        {
          std::lock_guard<std::mutex> g(mu);
          slots[i] = std::move(batch);
          errors[i] = err;
          ready[i] = 1;
        }
        cv_ready.notify_all();
      }
    }
    // The batch at position i (the loop asks in order).
    E& get(size_t i) {
      if (workers.empty()) {
        autograd::NoGradGuard no_grad;
        slots[i] = dataset->get_batch(batches[i]);
        return slots[i];
      }
      std::unique_lock<std::mutex> g(mu);
      cv_ready.wait(g, [&] { return ready[i] != 0; });
      if (errors[i]) std::rethrow_exception(errors[i]);
      return slots[i];
    }
    void advance(size_t i) {  // the loop is done with batch i
      {
        std::lock_guard<std::mutex> g(mu);
        slots[i] = E();
        consumed = i + 1;
      }
      cv_work.notify_all();
    }

    std::shared_ptr<Dataset<E>> dataset;
    std::vector<std::vector<size_t>> batches;
    std::vector<E> slots;
    std::vector<std::exception_ptr> errors;
    std::vector<char> ready;
    size_t window, next = 0, consumed = 0;
    bool stop = false;
    std::mutex mu;
    std::condition_variable cv_work, cv_ready;
    std::vector<std::thread> workers;
  };

 public:
  class Iterator {
   public:
    Iterator() = default;
    explicit Iterator(std::shared_ptr<Epoch> e) : epoch_(std::move(e)) { settle(); }
    E& operator*() { return *current_; }
    E* operator->() { return current_; }
    Iterator& operator++() {
      epoch_->advance(pos_);
      ++pos_;
      settle();
      return *this;
    }
    bool operator==(const Iterator& o) const { return done() == o.done() && (done() || pos_ == o.pos_); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    bool done() const { return !epoch_ || pos_ >= epoch_->batches.size(); }
    void settle() { current_ = done() ? nullptr : &epoch_->get(pos_); }
    std::shared_ptr<Epoch> epoch_;
    size_t pos_ = 0;
    E* current_ = nullptr;
  };

 private:
  std::shared_ptr<Dataset<E>> dataset_;
  DataLoaderOptions options_;
  Generator gen_;
};

template <typename D>
DataLoader(std::shared_ptr<D>, DataLoaderOptions) -> DataLoader<typename D::ExampleType>;
template <typename D>
DataLoader(std::shared_ptr<D>) -> DataLoader<typename D::ExampleType>;
template <typename D, typename = std::enable_if_t<!std::is_pointer_v<D>>>
DataLoader(D&&, DataLoaderOptions) -> DataLoader<typename std::decay_t<D>::ExampleType>;

}  // namespace kindle::data
