// torch::nn::utils::rnn over the core's packing ops (csrc/nn/packed.cpp).
#include "kindle/nn/packed_sequence.h"

#include "kindle/autograd.h"
#include "kindle/factories.h"
#include "kindle/ops.h"

namespace kindle::nn::utils::rnn {

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  Tensor out = empty_like(permutation, TensorOptions(kInt64));
  out.scatter_(0, permutation, arange(permutation.numel(), TensorOptions(kInt64).device(permutation.device())));
  return out;
}

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)), batch_sizes_(std::move(batch_sizes)), sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(unsorted_indices.defined() ? std::move(unsorted_indices) : invert_permutation(sorted_indices_)) {}

PackedSequence PackedSequence::to(const TensorOptions& options) const {
  Tensor data = data_.to(options);
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(TensorOptions(t.dtype()).device(data.device())) : t; };
  return PackedSequence(data, batch_sizes_, move(sorted_indices_), move(unsorted_indices_));
}

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  lengths = lengths.to(kInt64);
  Tensor sorted_indices;
  if (!enforce_sorted) {
    auto [sorted, order] = sort(lengths, 0, /*descending=*/true, /*stable=*/true);
    lengths = sorted;
    sorted_indices = order;
    input = input.index_select(batch_first ? 0 : 1, sorted_indices);
  }
  auto [data, batch_sizes] = _pack_padded_sequence(input, lengths, batch_first);
  return PackedSequence(data, batch_sizes, sorted_indices);
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first, double padding_value,
                                               std::optional<int64_t> total_length) {
  const int64_t steps = sequence.batch_sizes().size(0);
  KINDLE_CHECK_VALUE(!total_length || *total_length >= steps, "Expected total_length to be at least the length of "
                     "the longest sequence in input, but got total_length=", *total_length,
                     " and max sequence length being ", steps);
  auto [padded, lengths] = _pad_packed_sequence(sequence.data(), sequence.batch_sizes(), batch_first, padding_value,
                                                total_length.value_or(steps));
  if (sequence.unsorted_indices().defined()) {
    padded = padded.index_select(batch_first ? 0 : 1, sequence.unsorted_indices());
    lengths = lengths.index_select(0, sequence.unsorted_indices().to(TensorOptions(kInt64).device(kCPU)));
  }
  return {padded, lengths};
}

Tensor pad_sequence(TensorList sequences, bool batch_first, double padding_value, std::string_view padding_side) {
  return kindle::pad_sequence(sequences, batch_first, padding_value, padding_side);
}

PackedSequence pack_sequence(TensorList sequences, bool enforce_sorted) {
  std::vector<int64_t> lengths;
  for (const Tensor& s : sequences) lengths.push_back(s.size(0));
  return pack_padded_sequence(rnn::pad_sequence(sequences), tensor(lengths, kInt64), false, enforce_sorted);
}

std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first) {
  Tensor p = batch_first ? padded_sequences : padded_sequences.transpose(0, 1);
  KINDLE_CHECK(lengths.dim() == 1 && lengths.size(0) == p.size(0), "unpad_sequence: expected ", p.size(0),
               " lengths, got a tensor of shape ", lengths.sizes());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < p.size(0); ++i) out.push_back(slice(p.select(0, i), 0, 0, lengths.select(0, i).item<int64_t>()));
  return out;
}

std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences) {
  auto [padded, lengths] = pad_packed_sequence(packed_sequences, true);
  return unpad_sequence(padded, lengths, true);
}

}  // namespace kindle::nn::utils::rnn
