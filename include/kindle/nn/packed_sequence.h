// Packed sequences, as torch::nn::utils::rnn: thin wrappers over the core's packing ops
// (csrc/nn/packed.cpp), which Python's torch.nn.utils.rnn calls too.
//
//   auto packed = nn::utils::rnn::pack_padded_sequence(x, lengths, /*batch_first=*/true,
//                                                      /*enforce_sorted=*/false);
//   auto [out, state] = lstm->forward_with_packed_input(packed);
//   auto [padded, out_lengths] = nn::utils::rnn::pad_packed_sequence(out, true);
#pragma once
#include <optional>
#include <string_view>
#include <tuple>
#include <vector>

#include "kindle/tensor.h"
#include "kindle/tensor_options.h"

namespace kindle::nn::utils::rnn {

// The inverse of an index permutation (undefined for undefined).
Tensor invert_permutation(const Tensor& permutation);

// The steps of a batch of sequences sorted by decreasing length, time-major: batch_sizes[t]
// sequences run at step t. sorted_indices is the sort of the original batch (undefined when the
// batch came sorted); unsorted_indices undoes it.
class PackedSequence {
 public:
  PackedSequence() = default;
  explicit PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices = {}, Tensor unsorted_indices = {});
  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  // The data converted (the indices stay int64 on the CPU or move with the device).
  PackedSequence to(const TensorOptions& options) const;
  PackedSequence to(DType dtype) const { return to(TensorOptions(dtype)); }
  PackedSequence cpu() const { return to(TensorOptions().device(kCPU)); }
  bool is_cuda() const { return data_.device().is_cuda(); }
  bool is_pinned() const { return false; }
  bool defined() const { return data_.defined(); }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// A padded batch (T, B, *) (or (B, T, *) with batch_first) of sequences of the given lengths
// (a 1-D int64 CPU tensor). enforce_sorted: the lengths must decrease; otherwise the batch is
// sorted here and the permutation recorded.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);
// (padded, lengths) in the original batch order; total_length pads the steps to at least that.
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);
// Stacks sequences (L_i, *) into (T, B, *) (or (B, T, *)), padding each to the longest.
Tensor pad_sequence(TensorList sequences, bool batch_first = false, double padding_value = 0,
                    std::string_view padding_side = "right");
PackedSequence pack_sequence(TensorList sequences, bool enforce_sorted = true);
// The sequences pad_sequence stacked / pack_sequence packed.
std::vector<Tensor> unpad_sequence(const Tensor& padded_sequences, const Tensor& lengths, bool batch_first = false);
std::vector<Tensor> unpack_sequence(const PackedSequence& packed_sequences);

}  // namespace kindle::nn::utils::rnn
