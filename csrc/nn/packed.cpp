// Packed sequences (torch.nn.utils.rnn), once for both front ends: a PackedSequence holds the
// steps of a batch of sequences sorted by decreasing length, time-major; batch_sizes[t] counts the
// sequences still running at step t. Everything is slices and cat over runs of equal batch size,
// so gradients reach the inputs. Recurrent layers over a packed batch are rnn_packed
// (csrc/nn/rnn.cpp).
#include <string>
#include <vector>

#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/operators.h"
#include "nn/common.h"
#include "kindle/ops.h"

namespace kindle {

namespace {

std::vector<int64_t> values_of(const Tensor& t) {
  std::vector<int64_t> out(size_t(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[size_t(i)] = t.select(0, i).item<int64_t>();
  return out;
}

TensorOptions like(const Tensor& t) { return TensorOptions(t.dtype()).device(t.device()); }


// (start step, stop step, batch size) of each run of equal batch sizes.
struct Run {
  int64_t t0, t1, batch;
};
std::vector<Run> runs_of(const std::vector<int64_t>& sizes) {
  std::vector<Run> runs;
  for (size_t t = 0; t < sizes.size();) {
    size_t stop = t;
    while (stop < sizes.size() && sizes[stop] == sizes[t]) ++stop;
    runs.push_back({int64_t(t), int64_t(stop), sizes[t]});
    t = stop;
  }
  return runs;
}

}  // namespace

std::vector<int64_t> nn_detail::packed_batch_sizes(const Tensor& batch_sizes, const char* op) {
  KINDLE_CHECK(batch_sizes.dim() == 1 && batch_sizes.dtype() == kInt64 && batch_sizes.device().is_cpu(), op,
               ": batch_sizes should be a 1D CPU int64 tensor, but got ", batch_sizes.dim(), "D ",
               batch_sizes.device(), " ", scalar_type_name(batch_sizes.dtype()), " tensor");
  std::vector<int64_t> sizes = values_of(batch_sizes);
  for (size_t t = 0; t < sizes.size(); ++t)
    KINDLE_CHECK(sizes[t] > 0 && (t == 0 || sizes[t] <= sizes[t - 1]), op,
                 ": batch_sizes must be positive and non-increasing, got ", batch_sizes.sizes(), " with ", sizes[t],
                 " at step ", t);
  return sizes;
}

namespace {

// (T, B, *) sorted by decreasing length -> (sum of lengths, *).
Tensor padded_to_packed(const Tensor& padded, const std::vector<int64_t>& sizes) {
  std::vector<Tensor> pieces;
  for (const Run& r : runs_of(sizes)) {
    Tensor block = slice(slice(padded, 0, r.t0, r.t1), 1, 0, r.batch);
    std::vector<int64_t> shape{-1};
    for (int64_t d = 2; d < padded.dim(); ++d) shape.push_back(padded.size(d));
    pieces.push_back(block.reshape(shape));
  }
  return pieces.size() == 1 ? pieces[0] : cat(pieces, 0);
}

}  // namespace

std::tuple<Tensor, Tensor> _pack_padded_sequence(const Tensor& input, const Tensor& lengths, bool batch_first) {
  KINDLE_CHECK(lengths.dim() == 1 && lengths.dtype() == kInt64 && lengths.device().is_cpu(),
               "'lengths' argument should be a 1D CPU int64 tensor, but got ", lengths.dim(), "D ", lengths.device(),
               " ", scalar_type_name(lengths.dtype()), " tensor");
  KINDLE_CHECK(input.dim() >= 2, "_pack_padded_sequence: expected an input of at least 2 dimensions (steps, batch, *), "
               "got ", input.sizes());
  Tensor x = batch_first ? input.transpose(0, 1) : input;
  KINDLE_CHECK(x.numel() > 0, "Cannot pack empty tensors.");
  const std::vector<int64_t> len = values_of(lengths);
  KINDLE_CHECK(int64_t(len.size()) == x.size(1), "Expected `len(lengths)` to be equal to batch_size, but got ",
               len.size(), " (batch_size=", x.size(1), ")");
  KINDLE_CHECK(len.back() > 0, "Length of all samples has to be greater than 0, but found an element in 'lengths' "
               "that is <= 0");
  for (size_t i = 1; i < len.size(); ++i)
    KINDLE_CHECK(len[i - 1] >= len[i], "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                 "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep "
                 "this requirement if you do not need ONNX exportability.");
  // (torch reads past the input here; Kindle refuses)
  KINDLE_CHECK(len[0] <= x.size(0), "_pack_padded_sequence: the longest sequence has ", len[0],
               " steps but the padded input only ", x.size(0));
  std::vector<int64_t> sizes(static_cast<size_t>(len[0]));
  for (int64_t t = 0; t < len[0]; ++t) {
    int64_t n = 0;
    while (n < int64_t(len.size()) && len[size_t(n)] > t) ++n;
    sizes[size_t(t)] = n;
  }
  return {padded_to_packed(x, sizes), tensor(sizes, kInt64)};
}

std::tuple<Tensor, Tensor> _pad_packed_sequence(const Tensor& data, const Tensor& batch_sizes, bool batch_first,
                                                const Scalar& padding_value, int64_t total_length) {
  const std::vector<int64_t> sizes = nn_detail::packed_batch_sizes(batch_sizes, "_pad_packed_sequence");
  KINDLE_CHECK(!sizes.empty(), "_pad_packed_sequence: empty batch_sizes");
  const int64_t steps = int64_t(sizes.size()), batch = sizes[0];
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  KINDLE_CHECK(data.dim() >= 1 && data.size(0) == total, "_pad_packed_sequence: batch_sizes ", batch_sizes.sizes(),
               " sum to ", total, " steps but data has shape ", data.sizes());
  KINDLE_CHECK(total_length >= steps, "Expected total_length to be at least the length of the longest sequence in "
               "input, but got total_length=", total_length, " and max sequence length being ", steps);
  std::vector<int64_t> rest(data.sizes().begin() + 1, data.sizes().end());
  auto shape = [&](int64_t a, int64_t b) {
    std::vector<int64_t> s{a, b};
    s.insert(s.end(), rest.begin(), rest.end());
    return s;
  };
  std::vector<Tensor> pieces;
  int64_t offset = 0;
  for (const Run& r : runs_of(sizes)) {
    const int64_t n = r.t1 - r.t0;
    Tensor block = slice(data, 0, offset, offset + n * r.batch).reshape(shape(n, r.batch));
    offset += n * r.batch;
    if (r.batch < batch) block = cat({block, full(shape(n, batch - r.batch), padding_value, like(data))}, 1);
    pieces.push_back(block);
  }
  if (total_length > steps) pieces.push_back(full(shape(total_length - steps, batch), padding_value, like(data)));
  Tensor padded = pieces.size() == 1 ? pieces[0] : cat(pieces, 0);
  std::vector<int64_t> lengths(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t s : sizes) lengths[size_t(b)] += s > b ? 1 : 0;
  return {batch_first ? padded.transpose(0, 1) : padded, tensor(lengths, kInt64)};
}

Tensor pad_sequence(TensorList sequences, bool batch_first, double padding_value, std::string_view padding_side) {
  KINDLE_CHECK_VALUE(padding_side == "left" || padding_side == "right",
                     "Expected padding_side to be one of left or right, but got ", padding_side, ".");
  KINDLE_CHECK(!sequences.empty(), "received an empty list of sequences");
  int64_t longest = 0;
  for (const Tensor& s : sequences) {
    KINDLE_CHECK(s.dim() >= 1, "pad_sequence: expected sequences of at least one dimension, got one of shape ",
                 s.sizes());
    longest = std::max(longest, s.size(0));
  }
  std::vector<Tensor> padded;
  for (const Tensor& s : sequences) {
    const int64_t n = longest - s.size(0);
    if (n == 0) {
      padded.push_back(s);
      continue;
    }
    std::vector<int64_t> shape(s.sizes().begin(), s.sizes().end());
    shape[0] = n;
    Tensor fill = full(shape, padding_value, like(s));
    padded.push_back(padding_side == "right" ? cat({s, fill}, 0) : cat({fill, s}, 0));
  }
  return stack(padded, batch_first ? 0 : 1);
}

}  // namespace kindle
