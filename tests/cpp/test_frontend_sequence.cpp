// Recurrent layers, cells, MultiheadAttention and the Transformer encoder: parameter names and
// shapes, state handling, agreement with the ops they wrap, masks, checks.
#include <gtest/gtest.h>

#include <cmath>

#include <kindle/frontend.h>

using namespace kindle;

namespace {
std::vector<std::string> keys(const StateDict& d) { return d.keys(); }
}  // namespace

TEST(FrontendRNN, LSTMParametersAndShapes) {
  manual_seed(0);
  nn::LSTM lstm(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  EXPECT_EQ(keys(lstm->state_dict()),
            (std::vector<std::string>{
                "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "weight_ih_l0_reverse",
                "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse", "weight_ih_l1", "weight_hh_l1",
                "bias_ih_l1", "bias_hh_l1", "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse",
                "bias_hh_l1_reverse"}));
  EXPECT_EQ(lstm->named_parameters()["weight_ih_l1"].sizes(), IntArrayRef({20, 10}));
  double stdv = 1 / std::sqrt(5.0);
  for (auto& p : lstm->parameters()) EXPECT_LE(p.abs().max().item<double>(), stdv);
  Tensor x = randn({7, 2, 3});
  auto [out, state] = lstm->forward(x);  // libtorch's (output, (h_n, c_n))
  auto [h, c] = state;
  EXPECT_EQ(out.sizes(), IntArrayRef({7, 2, 10}));
  EXPECT_EQ(h.sizes(), IntArrayRef({4, 2, 5}));
  EXPECT_EQ(c.sizes(), IntArrayRef({4, 2, 5}));
  EXPECT_TRUE(equal(lstm(x), out));
  // The last forward step of the top layer is h_n of that direction.
  EXPECT_TRUE(equal(out.select(0, 6).narrow(1, 0, 5), h.select(0, 2)));
  // Explicit zero states give the same result.
  auto r = lstm(x, std::make_tuple(zeros({4, 2, 5}), zeros({4, 2, 5})));
  EXPECT_TRUE(equal(std::get<0>(r), out));
  EXPECT_TRUE(equal(std::get<1>(std::get<1>(lstm(x, zeros({4, 2, 5}), zeros({4, 2, 5})))), c));
  EXPECT_THROW(lstm(x, zeros({4, 3, 5}), zeros({4, 2, 5})), Error);
  EXPECT_THROW(lstm(randn({7, 2, 4})), Error);
  EXPECT_THROW(lstm(randn({7, 2, 3}, std::nullopt, kFloat64)), ValueError);
}

TEST(FrontendRNN, SingleLayerLSTMMatchesCell) {
  manual_seed(1);
  nn::LSTM lstm(nn::LSTMOptions(4, 6).batch_first(true));
  Tensor x = randn({2, 5, 4});
  auto r = lstm->forward_with_state(x);
  Tensor h = zeros({2, 6}), c = zeros({2, 6});
  for (int64_t t = 0; t < 5; ++t)
    std::tie(h, c) = lstm_cell(x.select(1, t), h, c, lstm->named_parameters()["weight_ih_l0"],
                               lstm->named_parameters()["weight_hh_l0"], lstm->named_parameters()["bias_ih_l0"],
                               lstm->named_parameters()["bias_hh_l0"]);
  EXPECT_TRUE(allclose(r.h_n.select(0, 0), h, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(r.c_n.select(0, 0), c, 1e-5, 1e-6));
  // Unbatched input.
  auto u = lstm->forward_with_state(x.select(0, 0));
  EXPECT_EQ(u.output.sizes(), IntArrayRef({5, 6}));
  EXPECT_EQ(u.h_n.sizes(), IntArrayRef({1, 6}));
  EXPECT_TRUE(allclose(u.output, r.output.select(0, 0), 1e-6, 1e-6));
}

TEST(FrontendRNN, GRUAndRNN) {
  nn::GRU gru(nn::GRUOptions(3, 4).num_layers(2));
  Tensor x = randn({6, 2, 3});
  auto [o, h] = gru(x, Tensor());  // libtorch's (output, h_n)
  EXPECT_EQ(o.sizes(), IntArrayRef({6, 2, 4}));
  EXPECT_EQ(h.sizes(), IntArrayRef({2, 2, 4}));
  EXPECT_FALSE(gru->forward_with_state(x).c_n.defined());
  Tensor y = gru(x);
  EXPECT_TRUE(equal(y, o));
  EXPECT_EQ(gru->named_parameters()["weight_ih_l0"].sizes(), IntArrayRef({12, 3}));
  nn::RNN rnn_relu(nn::RNNOptions(3, 4).nonlinearity("relu"));
  EXPECT_EQ(rnn_relu->mode, "RNN_RELU");
  EXPECT_GE(Tensor(rnn_relu(x)).min().item<double>(), 0.0);
  EXPECT_THROW(nn::RNN(nn::RNNOptions(3, 4).nonlinearity("sigmoid")), ValueError);
  EXPECT_THROW(nn::GRU(nn::GRUOptions(3, 4).dropout(2.0)), ValueError);
  // dropout between layers only while training
  nn::GRU drop(nn::GRUOptions(3, 4).num_layers(2).dropout(0.5));
  drop->eval();
  EXPECT_TRUE(equal(drop(x), drop(x)));
}

TEST(FrontendRNN, Cells) {
  nn::LSTMCell cell(3, 5);
  EXPECT_EQ(keys(cell->state_dict()), (std::vector<std::string>{"weight_ih", "weight_hh", "bias_ih", "bias_hh"}));
  Tensor x = randn({2, 3});
  auto [h, c] = cell(x, Tensor(), Tensor());
  auto [h1, c1] = cell->forward(x, std::make_tuple(zeros({2, 5}), zeros({2, 5})));  // libtorch's form
  EXPECT_TRUE(equal(h1, h) && equal(c1, c));
  auto [h3, c3] = cell->forward(x);  // libtorch: (h', c') from zero states
  EXPECT_TRUE(equal(h3, h) && equal(c3, c));
  Tensor only_h = cell(x);
  EXPECT_TRUE(equal(only_h, h));
  std::shared_ptr<nn::Module> as_module = cell.ptr();  // Module's one-tensor forward: h'
  EXPECT_TRUE(equal(as_module->forward(x), h));
  Tensor hs = h, cs = c;
  std::tie(hs, cs) = cell(x, std::make_tuple(hs, cs));  // a libtorch training loop's step
  EXPECT_EQ(hs.sizes(), IntArrayRef({2, 5}));
  EXPECT_FALSE(equal(hs, h));
  auto [h2, c2] = lstm_cell(x, zeros({2, 5}), zeros({2, 5}), cell->weight_ih, cell->weight_hh, cell->bias_ih, cell->bias_hh);
  EXPECT_TRUE(equal(h, h2));
  EXPECT_TRUE(equal(c, c2));
  nn::GRUCell gcell(3, 5);
  EXPECT_EQ(gcell(x.select(0, 0)).sizes(), IntArrayRef({5}));
  nn::RNNCell rcell(nn::RNNCellOptions(3, 5).bias(false));
  EXPECT_EQ(keys(rcell->state_dict()), (std::vector<std::string>{"weight_ih", "weight_hh"}));
  EXPECT_TRUE(equal(rcell(x), tanh(matmul(x, rcell->weight_ih.t()))));
  EXPECT_TRUE(equal(rcell->forward(x, zeros({2, 5})), rcell(x)));
  std::shared_ptr<nn::Module> g = gcell.ptr();
  EXPECT_TRUE(equal(g->forward(x), gcell->forward(x)));
  EXPECT_THROW(gcell(randn({1, 2, 3})), ValueError);
}

TEST(FrontendAttention, MultiheadAttentionMatchesManualComputation) {
  manual_seed(0);
  nn::MultiheadAttention mha(8, 2);
  EXPECT_EQ(keys(mha->state_dict()),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  EXPECT_EQ(mha->in_proj_bias.abs().sum().item<double>(), 0.0);
  Tensor q = randn({4, 3, 8});  // (L, N, E)
  auto [out, w] = mha(q, q, q);
  EXPECT_EQ(out.sizes(), IntArrayRef({4, 3, 8}));
  EXPECT_EQ(w.sizes(), IntArrayRef({3, 4, 4}));
  EXPECT_TRUE(allclose(w.sum(std::vector<int64_t>{-1}), ones({3, 4}), 1e-5, 1e-6));
  // Head by head, by hand.
  Tensor proj = linear(q, mha->in_proj_weight, mha->in_proj_bias);  // (L, N, 3E)
  auto qkv = proj.chunk(3, -1);
  std::vector<Tensor> heads;
  for (int64_t h = 0; h < 2; ++h) {
    Tensor qh = qkv[0].narrow(2, 4 * h, 4).transpose(0, 1);  // (N, L, 4)
    Tensor kh = qkv[1].narrow(2, 4 * h, 4).transpose(0, 1);
    Tensor vh = qkv[2].narrow(2, 4 * h, 4).transpose(0, 1);
    Tensor att = softmax(bmm(qh, kh.transpose(1, 2)) / 2.0, -1);
    heads.push_back(bmm(att, vh));
  }
  Tensor manual = linear(cat(heads, 2).transpose(0, 1), mha->out_proj->weight, mha->out_proj->bias);
  EXPECT_TRUE(allclose(out, manual, 1e-5, 1e-6));
  // The fused path (no weights) gives the same output.
  auto [out2, none] = mha(q, q, q, Tensor(), /*need_weights=*/false);
  EXPECT_FALSE(none.defined());
  EXPECT_TRUE(allclose(out2, out, 1e-5, 1e-6));
  EXPECT_TRUE(allclose(mha(q), out, 1e-5, 1e-6));
}

TEST(FrontendAttention, MasksBatchFirstAndKdim) {
  manual_seed(2);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(6, 3).batch_first(true));
  Tensor x = randn({2, 5, 6});  // (N, L, E)
  Tensor causal = nn::generate_square_subsequent_mask(5);
  auto [o1, w1] = mha(x, x, x, Tensor(), true, causal);
  // No attention to the future.
  EXPECT_EQ(w1.triu(1).abs().sum().item<double>(), 0.0);
  // A bool mask means the same as its -inf float form.
  Tensor bool_mask = causal.isinf();
  auto [o2, w2] = mha(x, x, x, Tensor(), true, bool_mask);
  EXPECT_TRUE(allclose(o1, o2, 1e-6, 1e-6));
  // Key padding: padded keys get zero weight.
  Tensor kpm = zeros({2, 5}, kBool);
  kpm.select(0, 1).narrow(0, 3, 2).fill_(Scalar(true));
  auto [o3, w3] = mha(x, x, x, kpm);
  EXPECT_EQ(w3.select(0, 1).narrow(1, 3, 2).abs().sum().item<double>(), 0.0);
  auto [o4, n4] = mha(x, x, x, kpm, false);
  EXPECT_TRUE(allclose(o3, o4, 1e-5, 1e-6));

  nn::MultiheadAttention cross(nn::MultiheadAttentionOptions(4, 2).kdim(3).vdim(5).add_bias_kv(true).add_zero_attn(true));
  EXPECT_EQ(keys(cross->state_dict()),
            (std::vector<std::string>{"q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                                      "bias_v", "out_proj.weight", "out_proj.bias"}));
  auto [co, cw] = cross(randn({2, 1, 4}), randn({3, 1, 3}), randn({3, 1, 5}));
  EXPECT_EQ(co.sizes(), IntArrayRef({2, 1, 4}));
  EXPECT_EQ(cw.sizes(), IntArrayRef({1, 2, 5}));  // 3 keys + bias_k + the zero key
  EXPECT_THROW(nn::MultiheadAttention(5, 2), Error);
}

TEST(FrontendAttention, TransformerEncoderLayerAndEncoder) {
  manual_seed(0);
  auto opts = nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0);
  nn::TransformerEncoderLayer layer(opts);
  Tensor x = randn({5, 2, 8});
  Tensor y = layer(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({5, 2, 8}));
  // Post-norm: each position is layer-normalised.
  EXPECT_LT(y.mean(std::vector<int64_t>{-1}).abs().max().item<double>(), 1e-5);
  // By hand.
  Tensor sa = std::get<0>(layer->self_attn->forward(x, x, x, Tensor(), false));
  Tensor h = layer_norm(x + sa, {8}, layer->norm1->weight, layer->norm1->bias);
  Tensor ff = linear(relu(linear(h, layer->linear1->weight, layer->linear1->bias)), layer->linear2->weight,
                     layer->linear2->bias);
  EXPECT_TRUE(allclose(y, layer_norm(h + ff, {8}, layer->norm2->weight, layer->norm2->bias), 1e-5, 1e-5));
  EXPECT_THROW(nn::TransformerEncoderLayer(nn::TransformerEncoderLayerOptions(8, 2).activation("tanh")), Error);

  // The encoder's copies start equal and consume the random stream once, as Python's deepcopy.
  manual_seed(5);
  nn::TransformerEncoder enc(opts, 3, /*final_norm=*/true);
  Tensor after_enc = rand({1});
  manual_seed(5);
  nn::TransformerEncoderLayer single(opts);
  Tensor after_layer = rand({1});
  EXPECT_TRUE(equal(after_enc, after_layer));
  StateDict sd = enc->state_dict();
  EXPECT_TRUE(sd.contains("layers.2.linear2.bias"));
  EXPECT_TRUE(sd.contains("norm.weight"));
  EXPECT_TRUE(equal(sd["layers.0.self_attn.in_proj_weight"], sd["layers.2.self_attn.in_proj_weight"]));
  EXPECT_TRUE(equal(sd["layers.1.linear1.weight"], single->linear1->weight));
  EXPECT_FALSE(sd["layers.0.linear1.weight"].is_same(sd["layers.1.linear1.weight"]));
  Tensor mask = nn::generate_square_subsequent_mask(5);
  Tensor e1 = enc(x, mask);
  Tensor e2 = enc(x, mask, Tensor(), true);
  EXPECT_TRUE(allclose(e1, e2, 1e-5, 1e-6));
  // Causal: the first position does not see the others.
  Tensor x2 = x.clone();
  x2.narrow(0, 1, 4).normal_();
  EXPECT_TRUE(allclose(enc(x2, mask).select(0, 0), e1.select(0, 0), 1e-5, 1e-6));
}

TEST(FrontendAttention, TransformerDecoderLayerDecoderAndTransformer) {
  manual_seed(0);
  auto opts = nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0);
  nn::TransformerDecoderLayer layer(opts);
  Tensor tgt = randn({4, 2, 8}), memory = randn({6, 2, 8});
  Tensor y = layer(tgt, memory);
  EXPECT_EQ(y.sizes(), IntArrayRef({4, 2, 8}));
  // By hand (post-norm): self-attention, attention over memory, feed-forward.
  auto ln = [](const Tensor& x, const nn::LayerNorm& n) { return layer_norm(x, {8}, n->weight, n->bias); };
  Tensor h1 = ln(tgt + std::get<0>(layer->self_attn->forward(tgt, tgt, tgt, Tensor(), false)), layer->norm1);
  Tensor h2 = ln(h1 + std::get<0>(layer->multihead_attn->forward(h1, memory, memory, Tensor(), false)), layer->norm2);
  Tensor ff = linear(relu(linear(h2, layer->linear1->weight, layer->linear1->bias)), layer->linear2->weight,
                     layer->linear2->bias);
  EXPECT_TRUE(allclose(y, ln(h2 + ff, layer->norm3), 1e-5, 1e-5));
  // Pre-norm and gelu run too, and a causal tgt_mask hides the future.
  nn::TransformerDecoderLayer pre(nn::TransformerDecoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0)
                                      .norm_first(true).activation("gelu"));
  Tensor mask = nn::generate_square_subsequent_mask(4);
  Tensor c1 = pre(tgt, memory, mask);
  Tensor tgt2 = tgt.clone();
  tgt2.narrow(0, 2, 2).normal_();
  EXPECT_TRUE(allclose(pre(tgt2, memory, mask).narrow(0, 0, 2), c1.narrow(0, 0, 2), 1e-5, 1e-6));
  EXPECT_THROW(nn::TransformerDecoderLayer(nn::TransformerDecoderLayerOptions(8, 2).activation("tanh")), Error);

  // The stack: equal copies, the causal hint detected from the mask, the final norm.
  nn::TransformerDecoder dec(opts, 2, /*final_norm=*/true);
  StateDict sd = dec->state_dict();
  for (const char* k : {"layers.1.multihead_attn.out_proj.weight", "layers.0.norm3.bias", "norm.weight"})
    EXPECT_TRUE(sd.contains(k)) << k;
  EXPECT_TRUE(equal(sd["layers.0.multihead_attn.in_proj_weight"], sd["layers.1.multihead_attn.in_proj_weight"]));
  EXPECT_TRUE(allclose(dec(tgt, memory, mask), dec(tgt, memory, mask, Tensor(), Tensor(), Tensor(), true), 1e-5, 1e-6));

  // Transformer: encoder and decoder stacks with final norms, xavier-initialised matrices.
  nn::Transformer model(nn::TransformerOptions(8, 2).num_encoder_layers(2).num_decoder_layers(1)
                            .dim_feedforward(16).dropout(0.0));
  StateDict msd = model->state_dict();
  for (const char* k : {"encoder.layers.1.linear2.weight", "encoder.norm.bias", "decoder.layers.0.norm3.weight",
                        "decoder.norm.weight"})
    EXPECT_TRUE(msd.contains(k)) << k;
  // xavier_uniform_ re-draws each matrix independently: the encoder's copies differ after it
  EXPECT_FALSE(equal(msd["encoder.layers.0.linear1.weight"], msd["encoder.layers.1.linear1.weight"]));
  double bound = std::sqrt(6.0 / (8 + 16));
  EXPECT_LE(msd["encoder.layers.0.linear1.weight"].abs().max().item<double>(), bound);
  Tensor src = randn({6, 2, 8});
  Tensor out = model(src, tgt, Tensor(), mask);
  EXPECT_EQ(out.sizes(), IntArrayRef({4, 2, 8}));
  Tensor memory2 = model->encoder(src);
  EXPECT_TRUE(allclose(out, model->decoder(tgt, memory2, mask), 1e-5, 1e-6));
  EXPECT_THROW(model(src, randn({4, 3, 8})), Error);  // batch sizes differ
  EXPECT_THROW(model(src, randn({4, 2, 6})), Error);  // not d_model features
}
