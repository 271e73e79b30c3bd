// Datasets, batching helpers and the IDX (MNIST) reader.
#include <cstring>
#include <fstream>

#include "kindle/data.h"
#include "util.h"

namespace kindle::data {

Example<> collate(const std::vector<Example<>>& examples) {
  KINDLE_CHECK_VALUE(!examples.empty(), "collate: no examples to batch");
  std::vector<Tensor> d, t;
  d.reserve(examples.size());
  t.reserve(examples.size());
  for (auto& e : examples) {
    d.push_back(e.data);
    t.push_back(e.target);
  }
  return {stack(d), stack(t)};
}

Tensor collate(const std::vector<Tensor>& examples) {
  KINDLE_CHECK_VALUE(!examples.empty(), "collate: no examples to batch");
  return stack(examples);
}

namespace datasets {

TensorDataset::TensorDataset(Tensor data, Tensor target) : data_(std::move(data)), target_(std::move(target)) {
  KINDLE_CHECK_VALUE(data_.defined() && target_.defined() && data_.dim() > 0 && target_.dim() > 0,
                     "TensorDataset: expected two defined tensors of at least one dimension");
  KINDLE_CHECK_VALUE(data_.size(0) == target_.size(0), "Size mismatch between tensors: data has ", data_.size(0),
                     " rows, target has ", target_.size(0));
}

Example<> TensorDataset::get(size_t index) {
  size_t n = size_t(data_.size(0));
  KINDLE_CHECK_INDEX(index < n, "TensorDataset: index ", index, " is out of range for a dataset of ", n, " examples");
  return {data_.select(0, int64_t(index)), target_.select(0, int64_t(index))};
}

Example<> TensorDataset::get_batch(ArrayRef<size_t> indices) {
  size_t n = size_t(data_.size(0));
  std::vector<int64_t> idx(indices.begin(), indices.end());
  for (int64_t i : idx)
    KINDLE_CHECK_INDEX(size_t(i) < n, "TensorDataset: index ", i, " is out of range for a dataset of ", n, " examples");
  Tensor it = kindle::tensor(idx);
  return {data_.index_select(0, it), target_.index_select(0, it)};
}

}  // namespace datasets

// ---- samplers

namespace samplers {

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  size_t n = std::min(batch_size, size_ - index_);
  if (n == 0) return std::nullopt;
  std::vector<size_t> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = index_ + i;
  index_ += n;
  return out;
}

RandomSampler::RandomSampler(int64_t size, DType index_dtype) {
  KINDLE_CHECK_VALUE(size >= 0, "RandomSampler: size must be non-negative, got ", size);
  KINDLE_CHECK_TYPE(index_dtype == kInt64 || index_dtype == kInt32 || index_dtype == kInt16,
                    "RandomSampler: index_dtype must be an integer type, got ", index_dtype);
  indices_ = randperm(size, std::nullopt, kInt64);
}

RandomSampler::RandomSampler(int64_t size, Generator generator) : generator_(std::move(generator)) {
  KINDLE_CHECK_VALUE(size >= 0, "RandomSampler: size must be non-negative, got ", size);
  indices_ = randperm(size, generator_, kInt64);
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  int64_t n = new_size ? int64_t(*new_size) : indices_.numel();
  indices_ = randperm(n, generator_, kInt64);
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  int64_t n = std::min<int64_t>(int64_t(batch_size), indices_.numel() - index_);
  if (n <= 0) return std::nullopt;
  Tensor slice = indices_.narrow(0, index_, n);
  std::vector<size_t> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[size_t(i)] = size_t(slice[i].item<int64_t>());
  index_ += n;
  return out;
}

OptionsSampler::OptionsSampler(size_t size, const DataLoaderOptions& o) {
  if (o.shuffle()) {
    uint64_t s = o.seed() ? *o.seed() : uint64_t(randint(0, INT64_MAX, {}).item<int64_t>());
    random_.emplace(int64_t(size), Generator(s));
  } else {
    sequential_.emplace(size);
  }
}

void OptionsSampler::reset(std::optional<size_t> new_size) {
  if (random_) random_->reset(new_size);
  else sequential_->reset(new_size);
}

std::optional<std::vector<size_t>> OptionsSampler::next(size_t batch_size) {
  return random_ ? random_->next(batch_size) : sequential_->next(batch_size);
}

}  // namespace samplers

// ---- loader helpers

void detail::check_loader_options(const DataLoaderOptions& o) {
  KINDLE_CHECK_VALUE(o.batch_size() > 0, "batch_size should be a positive integer value, but got batch_size=",
                     o.batch_size());
  KINDLE_CHECK_VALUE(!o.max_jobs() || *o.max_jobs() > 0, "max_jobs must be positive, got ", o.max_jobs().value_or(0));
}

// ---- IDX

namespace {

[[noreturn]] void idx_fail(const std::string& path, const std::string& what) {
  throw ValueError("read_idx: " + path + ": " + what);
}

bool idx_dtype(uint8_t code, DType& out) {
  switch (code) {
    case 0x08: out = kUInt8; return true;
    case 0x09: out = kInt8; return true;
    case 0x0B: out = kInt16; return true;
    case 0x0C: out = kInt32; return true;
    case 0x0D: out = kFloat32; return true;
    case 0x0E: out = kFloat64; return true;
    default: return false;
  }
}

}  // namespace

Tensor read_idx(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  KINDLE_CHECK(f.good(), "read_idx: cannot open ", path);
  uint64_t file_size = uint64_t(f.tellg());
  f.seekg(0);
  unsigned char magic[4];
  if (file_size < 4 || !f.read(reinterpret_cast<char*>(magic), 4)) idx_fail(path, "file too short for an IDX header");
  DType dtype;
  if (magic[0] != 0 || magic[1] != 0) idx_fail(path, "not an IDX file (the magic number must start with two zero bytes)");
  if (!idx_dtype(magic[2], dtype)) idx_fail(path, "unknown IDX element type 0x" + std::to_string(int(magic[2])));
  int ndim = magic[3];
  if (ndim < 1) idx_fail(path, "IDX files hold at least one dimension");
  if (file_size < 4 + 4 * uint64_t(ndim)) idx_fail(path, "file truncated inside the dimension sizes");
  std::vector<int64_t> shape;
  unsigned __int128 numel = 1;
  for (int d = 0; d < ndim; ++d) {
    unsigned char b[4];
    f.read(reinterpret_cast<char*>(b), 4);
    uint32_t s = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
    if (s > uint32_t(INT32_MAX)) idx_fail(path, "dimension " + std::to_string(d) + " has an invalid size");
    shape.push_back(int64_t(s));
    numel *= s;
  }
  uint64_t header = 4 + 4 * uint64_t(ndim);
  unsigned __int128 need = numel * itemsize(dtype);
  if (need != file_size - header)
    idx_fail(path, "the header describes " + std::to_string(uint64_t(std::min<unsigned __int128>(need, UINT64_MAX))) +
                       " bytes of data but the file holds " + std::to_string(file_size - header));
  Tensor t = empty_tensor(shape, dtype);
  if (need > 0 && !f.read(static_cast<char*>(t.data_ptr()), std::streamsize(need)))
    idx_fail(path, "file truncated inside the data");
  // IDX is big-endian.
  size_t w = itemsize(dtype);
  if (w > 1) {
    unsigned char* p = static_cast<unsigned char*>(t.data_ptr());
    for (uint64_t i = 0; i < uint64_t(need); i += w) std::reverse(p + i, p + i + w);
  }
  return t;
}

void write_idx(const Tensor& t0, const std::string& path) {
  KINDLE_CHECK_TYPE(t0.dtype() == kUInt8, "write_idx: expected a uint8 tensor, got ", t0.dtype());
  KINDLE_CHECK_VALUE(t0.dim() >= 1 && t0.dim() <= 255, "write_idx: expected 1 to 255 dimensions, got ", t0.dim());
  Tensor t = t0.contiguous();
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  KINDLE_CHECK(f.good(), "write_idx: cannot open ", path, " for writing");
  unsigned char magic[4] = {0, 0, 0x08, static_cast<unsigned char>(t.dim())};
  f.write(reinterpret_cast<char*>(magic), 4);
  for (int64_t s : t.sizes()) {
    unsigned char b[4] = {static_cast<unsigned char>(s >> 24), static_cast<unsigned char>(s >> 16),
                          static_cast<unsigned char>(s >> 8), static_cast<unsigned char>(s)};
    f.write(reinterpret_cast<char*>(b), 4);
  }
  f.write(static_cast<const char*>(t.data_ptr()), std::streamsize(t.nbytes()));
  KINDLE_CHECK(f.good(), "write_idx: writing ", path, " failed");
}

// ---- MNIST

namespace datasets {

Example<> MNIST::read(const std::string& images_path, const std::string& labels_path) {
  Tensor images = read_idx(images_path), labels = read_idx(labels_path);
  KINDLE_CHECK_VALUE(images.dim() == 3 && images.dtype() == kUInt8, "MNIST: ", images_path,
                     " must hold uint8 images of shape (N, H, W), got ", images.dtype(), " of shape ", images.sizes());
  KINDLE_CHECK_VALUE(labels.dim() == 1 && labels.dtype() == kUInt8, "MNIST: ", labels_path,
                     " must hold uint8 labels of shape (N,), got ", labels.dtype(), " of shape ", labels.sizes());
  KINDLE_CHECK_VALUE(images.size(0) == labels.size(0), "MNIST: ", images_path, " holds ", images.size(0),
                     " images but ", labels_path, " holds ", labels.size(0), " labels");
  Tensor x = images.to(kFloat32).div_(scalar_to_tensor(255.0)).unsqueeze(1);
  return {x, labels.to(kInt64)};
}

static std::string join(const std::string& root, const std::string& name) {
  return root.empty() || root.back() == '/' ? root + name : root + "/" + name;
}

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  Example<> e = read(join(root, train_ ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte"),
                     join(root, train_ ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte"));
  images_ = std::move(e.data);
  targets_ = std::move(e.target);
}

Example<> MNIST::get(size_t index) {
  size_t n = size_t(images_.size(0));
  KINDLE_CHECK_INDEX(index < n, "MNIST: index ", index, " is out of range for a dataset of ", n, " examples");
  return {images_[int64_t(index)], targets_[int64_t(index)]};
}

}  // namespace datasets

}  // namespace kindle::data
