"""The word-level language models of pytorch/examples/word_language_model, written as that
example writes them (time-major batches: input (seq, batch)).

RNNModel: embedding, dropout, a multi-layer nn.LSTM (dropout between layers), dropout, a linear
decoder to the vocabulary; the example's "medium" sizes are 650/650, 2 layers, dropout 0.5.
TransformerModel: embedding scaled by sqrt(d), sinusoidal positional encoding (a buffer) with
dropout, nn.TransformerEncoder over nn.TransformerEncoderLayer (post-norm, ReLU) with the causal
float mask, a linear decoder; the example's defaults are d 200, 2 heads, feed-forward 200,
2 layers, dropout 0.2.

Both return the decoder's logits flattened to (seq * batch, vocab) (the example applies
log_softmax and NLLLoss; the benchmark applies cross_entropy, the same loss). RNNModel also
returns its hidden state, as the example does; without a hidden state argument the LSTM starts
from zeros (the first batch of an epoch).
"""
import math


def build_lstm(lib, ntoken=10000, ninp=650, nhid=650, nlayers=2, dropout=0.5, tie_weights=False):
    nn = lib.nn

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                if nhid != ninp:
                    raise ValueError("When using the tied flag, nhid must be equal to emsize")
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.nhid, self.nlayers = nhid, nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden=None):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            return decoded.view(-1, self.ntoken), hidden

        def init_hidden(self, bsz):
            return (lib.zeros(self.nlayers, bsz, self.nhid), lib.zeros(self.nlayers, bsz, self.nhid))

    return RNNModel()


def build_transformer(lib, ntoken=10000, ninp=200, nhead=2, nhid=200, nlayers=2, dropout=0.2):
    nn = lib.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=5000):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[:x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            encoder_layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
            # enable_nested_tensor only matters with a padding mask (and warns for seq-first
            # layers); the example leaves it at its default.
            self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.ntoken = ntoken
            self.decoder = nn.Linear(ninp, ntoken)
            self.init_weights()

        def _generate_square_subsequent_mask(self, sz):
            mask = (lib.triu(lib.ones(sz, sz)) == 1).transpose(0, 1)
            return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, src, has_mask=True):
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    self.src_mask = self._generate_square_subsequent_mask(len(src))
            else:
                self.src_mask = None
            src = self.encoder(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.transformer_encoder(src, self.src_mask)
            output = self.decoder(output)
            return output.view(-1, self.ntoken)

    return TransformerModel()
