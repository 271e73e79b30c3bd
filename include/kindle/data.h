// kindle::data: datasets, transforms, samplers and data loaders, spelled as libtorch's torch::data.
//
//   auto train = data::datasets::MNIST(root)
//                    .map(data::transforms::Normalize<>(0.1307, 0.3081))
//                    .map(data::transforms::Stack<>());
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(std::move(train), 64);
//   for (data::Example<>& batch : *loader) { ... batch.data, batch.target ... }
//
// A dataset gives examples by index (Dataset<Self>::get) or batches by a list of indices
// (BatchDataset::get_batch); .map(transform) wraps it. A sampler says which indices form each
// batch of an epoch; the loader asks the dataset for them, on worker threads if
// options.workers() > 0, and hands them out in the sampler's order. Kindle's own shortcut,
// data::DataLoader(dataset, DataLoaderOptions(64).shuffle(true).seed(1)), picks the sampler
// from the options. Every batch is built with gradient recording off.
#pragma once
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/nn/options.h"
#include "kindle/ops.h"

namespace kindle::data {

template <typename Data = Tensor, typename Target = Tensor>
struct Example {
  using DataType = Data;
  using TargetType = Target;
  Example() = default;
  Example(Data data, Target target) : data(std::move(data)), target(std::move(target)) {}
  Data data;
  Target target;
};

// Stacks examples (or tensors) along a new first dim; ValueError when their shapes differ.
Example<> collate(const std::vector<Example<>>& examples);
Tensor collate(const std::vector<Tensor>& examples);

namespace datasets {

template <typename Source, typename Transform>
class MapDataset;
template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform);

template <typename Self, typename Batch = std::vector<Example<>>, typename BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  static constexpr bool is_stateful = false;
  virtual ~BatchDataset() = default;
  virtual Batch get_batch(BatchRequest request) = 0;
  // The number of examples (nullopt: unknown).
  virtual std::optional<size_t> size() const = 0;

  // This dataset (copied, or moved from a temporary) with `transform` applied to every batch.
  template <typename T>
  MapDataset<Self, T> map(T transform) & {
    return datasets::map(static_cast<Self&>(*this), std::move(transform));
  }
  template <typename T>
  MapDataset<Self, T> map(T transform) && {
    return datasets::map(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A dataset of single examples; a batch is the vector of examples at the requested indices.
template <typename Self, typename SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  virtual ExampleType get(size_t index) = 0;
  std::vector<ExampleType> get_batch(ArrayRef<size_t> indices) override {
    std::vector<ExampleType> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

template <typename Source, typename Transform>
class MapDataset : public BatchDataset<MapDataset<Source, Transform>, typename Transform::OutputBatchType,
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = Transform;
  using BatchRequestType = typename Source::BatchRequestType;
  using OutputBatchType = typename Transform::OutputBatchType;

  MapDataset(Source dataset, Transform transform) : dataset_(std::move(dataset)), transform_(std::move(transform)) {}
  OutputBatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }
  const Source& dataset() const { return dataset_; }
  const Transform& transform() const { return transform_; }

 private:
  Source dataset_;
  Transform transform_;
};

template <typename D, typename T>
MapDataset<D, T> map(D dataset, T transform) {
  static_assert(std::is_same_v<typename D::BatchType, typename T::InputBatchType>,
                "map: the transform's input batch type is not the dataset's batch type");
  return MapDataset<D, T>(std::move(dataset), std::move(transform));
}

// Rows of `data` with the matching rows of `target` (Python's TensorDataset of two tensors);
// batches are gathered with one index_select each.
class TensorDataset : public BatchDataset<TensorDataset, Example<>> {
 public:
  using ExampleType = Example<>;
  TensorDataset(Tensor data, Tensor target);
  Example<> get(size_t index);
  Example<> get_batch(ArrayRef<size_t> indices) override;
  std::optional<size_t> size() const override { return size_t(data_.size(0)); }
  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_, target_;
};

// The MNIST files in `root` (train-images-idx3-ubyte, ... or t10k-*): images float32 in [0, 1]
// of shape (N, 1, rows, cols), targets int64.
class MNIST : public Dataset<MNIST> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override { return size_t(images_.size(0)); }
  bool is_train() const noexcept { return train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }
  // (images, targets) from a pair of IDX files.
  static Example<> read(const std::string& images_path, const std::string& labels_path);

 private:
  Tensor images_, targets_;
  bool train_;
};

}  // namespace datasets

using datasets::BatchDataset;
using datasets::Dataset;
using datasets::MNIST;          // (Kindle's shorter spellings)
using datasets::TensorDataset;

// IDX files (the MNIST format): the tensor of any dtype the format has; big-endian payloads.
Tensor read_idx(const std::string& path);
void write_idx(const Tensor& t, const std::string& path);

namespace transforms {

template <typename InputBatch, typename OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// Applies to each example of a batch.
template <typename Input, typename Output = Input>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual Output apply(Input input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> out;
    out.reserve(input_batch.size());
    for (auto& e : input_batch) out.push_back(apply(std::move(e)));
    return out;
  }
};

template <typename Input, typename Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType fn) : fn_(std::move(fn)) {}
  Output apply(Input input) override { return fn_(std::move(input)); }

 private:
  FunctionType fn_;
};

template <typename Input, typename Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using FunctionType = std::function<Output(Input)>;
  explicit BatchLambda(FunctionType fn) : fn_(std::move(fn)) {}
  Output apply_batch(Input input) override { return fn_(std::move(input)); }

 private:
  FunctionType fn_;
};

// Turns a vector of examples into one batch.
template <typename BatchType, typename T = std::vector<BatchType>>
using Collation = BatchTransform<T, BatchType>;
template <typename BatchType, typename T = std::vector<BatchType>>
using Collate = BatchLambda<T, BatchType>;

template <typename E = Example<>>
struct Stack;
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) override { return collate(examples); }
};

// Changes the data of each example, keeping its target.
template <typename Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  virtual Tensor operator()(Tensor input) = 0;
  E apply(E input) override { return E((*this)(std::move(input.data)), std::move(input.target)); }
};

template <typename Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType fn) : fn_(std::move(fn)) {}
  Tensor operator()(Tensor input) override { return fn_(std::move(input)); }

 private:
  FunctionType fn_;
};

// (x - mean) / stddev per channel (dim 0 of each example); one value applies to every channel.
template <typename Target = Tensor>
class Normalize : public TensorTransform<Target> {
 public:
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(kindle::tensor(mean.vec(), kFloat32).reshape({-1, 1, 1})),
        stddev(kindle::tensor(stddev.vec(), kFloat32).reshape({-1, 1, 1})) {}
  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }
  Tensor mean, stddev;
};

}  // namespace transforms

namespace samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts a new epoch (over `new_size` examples when given).
  virtual void reset(std::optional<size_t> new_size) = 0;
  // The next batch of at most batch_size indices; nullopt when the epoch is over.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

// 0, 1, 2, ...
class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  size_t size_, index_ = 0;
};

// A new random permutation each epoch, drawn from the default generator (kindle::manual_seed
// fixes it) or from the sampler's own.
class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size, DType index_dtype = kInt64);
  RandomSampler(int64_t size, Generator generator);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return size_t(index_); }

 private:
  std::optional<Generator> generator_;
  Tensor indices_;
  int64_t index_ = 0;
};

}  // namespace samplers

struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}
  KINDLE_ARG(size_t, batch_size) = 1;
  // Threads that build batches ahead of the loop (0: the loop builds each batch itself).
  KINDLE_ARG(size_t, workers) = 0;
  // Batches in flight at once (default 2 per worker).
  KINDLE_ARG(std::optional<size_t>, max_jobs);
  KINDLE_ARG(std::optional<std::chrono::milliseconds>, timeout);
  // Batches always arrive in the sampler's order (false is accepted and changes nothing).
  KINDLE_ARG(bool, enforce_ordering) = true;
  KINDLE_ARG(bool, drop_last) = false;
  // Kindle's data::DataLoader only: the sampler it picks (random each epoch, from `seed` or a
  // seed drawn from the default generator when the loader is built).
  KINDLE_ARG(bool, shuffle) = false;
  KINDLE_ARG(std::optional<uint64_t>, seed);

 public:
  DataLoaderOptions& num_workers(size_t n) { return workers(n); }
};

namespace detail {
void check_loader_options(const DataLoaderOptions& o);
// The batches of one epoch, from the sampler.
template <typename Sampler>
std::vector<typename Sampler::BatchRequestType> epoch_requests(Sampler& sampler, std::optional<size_t> size,
                                                               const DataLoaderOptions& o) {
  sampler.reset(size);
  std::vector<typename Sampler::BatchRequestType> out;
  while (auto r = sampler.next(o.batch_size())) {
    if (r->size() == 0 || (o.drop_last() && r->size() < o.batch_size())) break;
    out.push_back(std::move(*r));
  }
  return out;
}
}  // namespace detail

// Iterates batches of `Dataset` in the order `Sampler` gives (libtorch's StatelessDataLoader).
template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : dataset_(std::make_shared<Dataset>(std::move(dataset))), sampler_(std::move(sampler)),
        options_(std::move(options)) {
    detail::check_loader_options(options_);
  }
  const DataLoaderOptions& options() const noexcept { return options_; }
  Dataset& dataset() { return *dataset_; }
  // Batches per epoch, when the dataset knows its size.
  size_t size() const {
    size_t n = dataset_->size().value_or(0), b = options_.batch_size();
    return options_.drop_last() ? n / b : (n + b - 1) / b;
  }
  void join() {}

  class Iterator;
  // Starts an epoch: the iterator owns it (its worker threads end when it goes).
  Iterator begin() {
    return Iterator(std::make_shared<Epoch>(dataset_, detail::epoch_requests(sampler_, dataset_->size(), options_),
                                            options_));
  }
  Iterator end() { return Iterator(); }

 private:
  struct Epoch {
    Epoch(std::shared_ptr<Dataset> ds, std::vector<BatchRequestType> reqs, const DataLoaderOptions& o)
        : dataset(std::move(ds)), requests(std::move(reqs)), slots(requests.size()), errors(requests.size()),
          ready(requests.size(), 0), window(o.max_jobs().value_or(2 * o.workers())) {
      if (window == 0) window = 1;
      for (size_t w = 0; w < o.workers(); ++w) workers.emplace_back([this] { work(); });
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
          cv_work.wait(g, [&] { return stop || (next < requests.size() && next < consumed + window); });
          if (stop) return;
          i = next++;
        }
        std::optional<BatchType> batch;
        std::exception_ptr err;
        try {
          batch.emplace(dataset->get_batch(requests[i]));
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
    BatchType& get(size_t i) {
      if (workers.empty()) {
        autograd::NoGradGuard no_grad;
        slots[i].emplace(dataset->get_batch(requests[i]));
        return *slots[i];
      }
      std::unique_lock<std::mutex> g(mu);
      cv_ready.wait(g, [&] { return ready[i] != 0; });
      if (errors[i]) std::rethrow_exception(errors[i]);
      return *slots[i];
    }
    void advance(size_t i) {  // the loop is done with batch i
      {
        std::lock_guard<std::mutex> g(mu);
        slots[i].reset();
        consumed = i + 1;
      }
      cv_work.notify_all();
    }

    std::shared_ptr<Dataset> dataset;
    std::vector<BatchRequestType> requests;
    std::vector<std::optional<BatchType>> slots;
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
    BatchType& operator*() { return *current_; }
    BatchType* operator->() { return current_; }
    Iterator& operator++() {
      epoch_->advance(pos_);
      ++pos_;
      settle();
      return *this;
    }
    bool operator==(const Iterator& o) const { return done() == o.done() && (done() || pos_ == o.pos_); }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    bool done() const { return !epoch_ || pos_ >= epoch_->requests.size(); }
    void settle() { current_ = done() ? nullptr : &epoch_->get(pos_); }
    std::shared_ptr<Epoch> epoch_;
    size_t pos_ = 0;
    BatchType* current_ = nullptr;
  };

 private:
  std::shared_ptr<Dataset> dataset_;
  Sampler sampler_;
  DataLoaderOptions options_;
};

namespace samplers {
// What data::DataLoader uses: sequential, or (options.shuffle) a new permutation each epoch
// from its own generator.
class OptionsSampler : public Sampler<> {
 public:
  OptionsSampler(size_t size, const DataLoaderOptions& o);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;

 private:
  std::optional<RandomSampler> random_;
  std::optional<SequentialSampler> sequential_;
};
}  // namespace samplers

// Kindle's shortcut: the sampler follows options.shuffle()/seed().
template <typename Dataset>
class DataLoader : public StatelessDataLoader<Dataset, samplers::OptionsSampler> {
 public:
  DataLoader(Dataset dataset, DataLoaderOptions options = {})
      : DataLoader(sized(dataset), std::move(dataset), std::move(options)) {}

 private:
  DataLoader(size_t n, Dataset&& dataset, DataLoaderOptions&& options)
      : StatelessDataLoader<Dataset, samplers::OptionsSampler>(std::move(dataset), samplers::OptionsSampler(n, options),
                                                               options) {}
  static size_t sized(const Dataset& d) {
    auto n = d.size();
    KINDLE_CHECK(n.has_value(), "DataLoader: Expected the dataset to be sized in order to construct the Sampler");
    return *n;
  }
};

template <typename Sampler = samplers::RandomSampler, typename Dataset,
          typename = std::enable_if_t<std::is_constructible_v<Sampler, size_t>>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset,
                                                                        DataLoaderOptions options = {}) {
  const std::optional<size_t> size = dataset.size();
  KINDLE_CHECK(size.has_value(), "make_data_loader: Expected the dataset to be sized in order to construct the Sampler");
  Sampler sampler(*size);
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

template <typename Dataset, typename Sampler,
          typename = std::enable_if_t<std::is_base_of_v<samplers::Sampler<typename Sampler::BatchRequestType>, Sampler>>>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(Dataset dataset, Sampler sampler,
                                                                        DataLoaderOptions options = {}) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset), std::move(sampler),
                                                                 std::move(options));
}

}  // namespace kindle::data
