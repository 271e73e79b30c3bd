// torch::nn::utils::rnn in C++: packing and padding round trips in both batch layouts, the errors
// PyTorch raises, and recurrent layers on packed batches against each sequence run on its own.
#include <gtest/gtest.h>

#include <kindle/frontend.h>

using namespace kindle;
namespace rnn = kindle::nn::utils::rnn;

namespace {

Tensor lengths_of(std::vector<int64_t> v) {
  Tensor t = empty({int64_t(v.size())}, kInt64);
  for (size_t i = 0; i < v.size(); ++i) t.select(0, int64_t(i)).fill_(v[i]);
  return t;
}

std::vector<int64_t> to_vec(const Tensor& t) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.select(0, i).item<int64_t>());
  return out;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(FrontendPacked, PackPadRoundTrips) {
  manual_seed(0);
  std::vector<Tensor> seqs = {randn({3, 2}), randn({1, 2}), randn({4, 2})};
  EXPECT_NE(error_of([&] { rnn::pack_sequence(seqs); }).find("must be sorted in decreasing order"), std::string::npos);
  rnn::PackedSequence p = rnn::pack_sequence(seqs, /*enforce_sorted=*/false);
  EXPECT_EQ(to_vec(p.batch_sizes()), (std::vector<int64_t>{3, 2, 2, 1}));
  EXPECT_EQ(to_vec(p.sorted_indices()), (std::vector<int64_t>{2, 0, 1}));
  EXPECT_EQ(to_vec(p.unsorted_indices()), (std::vector<int64_t>{1, 2, 0}));
  std::vector<Tensor> back = rnn::unpack_sequence(p);
  ASSERT_EQ(back.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(equal(back[i], seqs[i]));
  for (bool batch_first : {false, true}) {
    Tensor padded = rnn::pad_sequence(seqs, batch_first, 9.0);
    EXPECT_EQ(padded.sizes(), batch_first ? (std::vector<int64_t>{3, 4, 2}) : (std::vector<int64_t>{4, 3, 2}));
    rnn::PackedSequence q = rnn::pack_padded_sequence(padded, lengths_of({3, 1, 4}), batch_first, false);
    EXPECT_TRUE(equal(q.data(), p.data()));
    auto [again, lengths] = rnn::pad_packed_sequence(q, batch_first, 9.0, 6);
    EXPECT_EQ(to_vec(lengths), (std::vector<int64_t>{3, 1, 4}));
    EXPECT_EQ(again.size(batch_first ? 1 : 0), 6);
    EXPECT_TRUE(equal(slice(again, batch_first ? 1 : 0, 0, 4), padded));
  }
  Tensor left = rnn::pad_sequence(seqs, true, 0.0, "left");
  EXPECT_TRUE(equal(left.select(0, 1).select(0, 3), seqs[1].select(0, 0)));
  EXPECT_NE(error_of([&] { rnn::pad_packed_sequence(p, false, 0.0, 2); }).find("Expected total_length to be at least"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rnn::pack_padded_sequence(randn({3, 2, 1}), lengths_of({3, 0})); })
                .find("Length of all samples has to be greater than 0"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rnn::pack_padded_sequence(randn({3, 2, 1}), lengths_of({3})); })
                .find("Expected `len(lengths)` to be equal to batch_size"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rnn::pack_padded_sequence(randn({3, 2, 1}), lengths_of({5, 1})); }).find("only 3"),
            std::string::npos);
  EXPECT_NE(error_of([&] { rnn::pad_sequence(std::vector<Tensor>{}); }).find("empty list"), std::string::npos);
}

TEST(FrontendPacked, RecurrentLayersMatchEachSequenceAlone) {
  manual_seed(1);
  nn::LSTM lstm(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
  nn::GRU gru(nn::GRUOptions(3, 4));
  const std::vector<int64_t> lengths = {2, 5, 1, 5, 3};
  std::vector<Tensor> seqs;
  for (int64_t n : lengths) seqs.push_back(randn({n, 3}).requires_grad_(true));
  rnn::PackedSequence packed = rnn::pack_sequence(seqs, false);
  Tensor h0 = randn({4, 5, 4}), c0 = randn({4, 5, 4});
  auto [out, state] = lstm->forward_with_packed_input(packed, std::make_tuple(h0, c0));
  auto [h, c] = state;
  auto [padded, out_lengths] = rnn::pad_packed_sequence(out);
  auto [gout, gh] = gru->forward_with_packed_input(packed);
  auto [gpadded, glen] = rnn::pad_packed_sequence(gout);
  for (size_t i = 0; i < lengths.size(); ++i) {
    const int64_t b = int64_t(i);
    auto [o1, s1] = lstm->forward(seqs[i].unsqueeze(1), std::make_tuple(slice(h0, 1, b, b + 1), slice(c0, 1, b, b + 1)));
    EXPECT_TRUE(allclose(slice(padded.select(1, b), 0, 0, lengths[i]), o1.squeeze(1), 1e-5, 1e-6)) << i;
    EXPECT_TRUE(allclose(slice(h, 1, b, b + 1), std::get<0>(s1), 1e-5, 1e-6)) << i;
    EXPECT_TRUE(allclose(slice(c, 1, b, b + 1), std::get<1>(s1), 1e-5, 1e-6)) << i;
    auto [g1, gh1] = gru->forward(seqs[i].unsqueeze(1));
    EXPECT_TRUE(allclose(slice(gpadded.select(1, b), 0, 0, lengths[i]), g1.squeeze(1), 1e-5, 1e-6)) << i;
    EXPECT_TRUE(allclose(slice(gh, 1, b, b + 1), gh1, 1e-5, 1e-6)) << i;
  }
  (out.data().sum() + h.sum()).backward();
  for (const Tensor& s : seqs) EXPECT_TRUE(s.grad().defined() && s.grad().abs().sum().item<double>() > 0);
}
