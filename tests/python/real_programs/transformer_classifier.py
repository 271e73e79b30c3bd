"""A Transformer-encoder sequence classifier with sinusoidal positional encoding, padding
masks, label smoothing, a warmup schedule and optional activation (gradient) checkpointing.

The task: each sequence of tokens is labelled by which of four "motifs" it repeats.

    python transformer_classifier.py [--init w.pt] [--save-init w.pt] [--grad-checkpoint]
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.utils.checkpoint
from torch import Tensor


class PositionalEncoding(nn.Module):

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 5000):
        super().__init__()
        self.dropout = nn.Dropout(p=dropout)

        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(1, max_len, d_model)
        pe[0, :, 0::2] = torch.sin(position * div_term)
        pe[0, :, 1::2] = torch.cos(position * div_term)
        self.register_buffer('pe', pe)

    def forward(self, x: Tensor) -> Tensor:
        """x: Tensor, shape ``[batch_size, seq_len, embedding_dim]``"""
        x = x + self.pe[:, :x.size(1)]
        return self.dropout(x)


class SequenceClassifier(nn.Module):
    def __init__(self, ntoken, num_classes, d_model=32, nhead=4, d_hid=64, nlayers=2, dropout=0.0, pad_idx=0):
        super().__init__()
        self.model_type = 'Transformer'
        self.pad_idx = pad_idx
        self.embedding = nn.Embedding(ntoken, d_model, padding_idx=pad_idx)
        self.pos_encoder = PositionalEncoding(d_model, dropout, max_len=64)
        encoder_layer = nn.TransformerEncoderLayer(d_model, nhead, d_hid, dropout, batch_first=True,
                                                   norm_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(encoder_layer, nlayers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, num_classes)
        self.d_model = d_model
        self.gradient_checkpointing = False
        self.init_weights()

    def init_weights(self) -> None:
        initrange = 0.1
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.head.bias.data.zero_()
        self.head.weight.data.uniform_(-initrange, initrange)

    def forward(self, src: Tensor) -> Tensor:
        padding_mask = src == self.pad_idx  # True where there is padding
        x = self.embedding(src) * math.sqrt(self.d_model)
        x = self.pos_encoder(x)
        if self.gradient_checkpointing and self.training:
            for layer in self.encoder.layers:
                x = torch.utils.checkpoint.checkpoint(layer, x, None, padding_mask, use_reentrant=False)
        else:
            x = self.encoder(x, src_key_padding_mask=padding_mask)
        x = self.norm(x)
        # mean over the real (non-padding) positions
        keep = (~padding_mask).unsqueeze(-1).to(x.dtype)
        pooled = (x * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        return self.head(pooled)


def make_dataset(n, seq_len=24, vocab=20, pad_idx=0):
    """Sequences that repeat one of four motifs, with varying lengths padded on the right."""
    motifs = [[3, 4, 5], [6, 7, 6, 8], [9, 10], [11, 12, 13, 14, 15]]
    data = torch.full((n, seq_len), pad_idx, dtype=torch.long)
    labels = torch.empty(n, dtype=torch.long)
    for i in range(n):
        c = (i * 7 + i // 5) % len(motifs)
        length = 8 + (i * 5) % (seq_len - 8)
        seq = [motifs[c][j % len(motifs[c])] for j in range(length)]
        # a few distractor tokens, at fixed places
        for j in range(i % 3):
            seq[(j * 5 + i) % length] = 16 + (i + j) % (vocab - 16)
        data[i, :length] = torch.tensor(seq)
        labels[i] = c
    return data, labels


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--init", default="")
    parser.add_argument("--save-init", default="")
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--grad-checkpoint", action="store_true", help="recompute activations in backward")
    args = parser.parse_args()

    torch.manual_seed(0)
    model = SequenceClassifier(ntoken=20, num_classes=4)
    if args.save_init:
        torch.save(model.state_dict(), args.save_init)
        print(f"saved initial weights to {args.save_init}")
        return
    if args.init:
        model.load_state_dict(torch.load(args.init))
    model.gradient_checkpointing = args.grad_checkpoint
    print(f"{sum(p.numel() for p in model.parameters() if p.requires_grad)} trainable parameters")

    train_x, train_y = make_dataset(128)
    test_x, test_y = make_dataset(64, pad_idx=0)
    test_x, test_y = test_x.flip(0), test_y.flip(0)

    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    warmup = 5
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * step / args.steps)))

    model.train()
    for step in range(args.steps):
        start = (step * args.batch_size) % len(train_x)
        xb, yb = train_x[start:start + args.batch_size], train_y[start:start + args.batch_size]
        logits = model(xb)
        loss = criterion(logits, yb)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        if step % 4 == 0 or step == args.steps - 1:
            print(f"step {step:3d} | loss {loss.item():.6f} | grad norm {grad_norm.item():.6f} | "
                  f"lr {scheduler.get_last_lr()[0]:.6f}")

    model.eval()
    with torch.inference_mode():
        logits = model(test_x)
        test_loss = criterion(logits, test_y).item()
        acc = (logits.argmax(-1) == test_y).float().mean().item()
        probs = logits.softmax(-1)
    print(f"test loss {test_loss:.6f} | accuracy {acc:.4f}")
    print(f"first predictions {logits.argmax(-1)[:12].tolist()}")
    print(f"mean max probability {probs.max(dim=-1).values.mean().item():.6f}")


if __name__ == "__main__":
    main()
