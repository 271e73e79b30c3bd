"""A character-level language model (LSTM or a small GPT) trained on Python's own sources.

The text is the source code of a few standard-library modules, which every Python
installation has (or any file given with --text). The model learns to predict the next
character; every --eval-every steps it prints its validation loss and a sample it writes
itself. A model that knows only how often each character occurs scores the unigram entropy
(printed at the start); the trained model ends well below it.

    python examples/char_lm.py                    # 2-layer LSTM
    python examples/char_lm.py --model gpt        # 4-layer GPT with causal self-attention
    python examples/char_lm.py --text my.txt --steps 2000

Write `torch` for `kindle` in the imports and the same script runs on PyTorch.
"""
import argparse
import importlib.util
import math
import sys
import time

import kindle
import kindle.nn.functional as F
from kindle import nn
from kindle.utils.data import DataLoader, Dataset

try:
    from tqdm import tqdm
except ImportError:  # the progress bar is optional: pip install tqdm
    tqdm = None

# Pure-Python modules whose sources make a varied, few-hundred-KB corpus.
CORPUS_MODULES = ["argparse", "textwrap", "difflib", "json.decoder", "json.encoder", "string",
                  "dataclasses", "calendar", "bisect", "enum", "pprint", "collections",
                  "contextlib", "random", "configparser"]


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a character-level language model on text "
                                            "from Python's standard library.")
    p.add_argument("--model", choices=["lstm", "gpt"], default="lstm")
    p.add_argument("--steps", type=int, default=600, help="optimizer steps (600)")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--seq-len", type=int, default=64, help="characters per training sequence")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (3e-3)")
    p.add_argument("--hidden", type=int, default=None,
                   help="LSTM hidden size (256) or GPT model width (128)")
    p.add_argument("--layers", type=int, default=None,
                   help="LSTM layers (2) or GPT blocks (4)")
    p.add_argument("--heads", type=int, default=4, help="GPT attention heads (4)")
    p.add_argument("--eval-every", type=int, default=200, help="steps between evaluations")
    p.add_argument("--sample-len", type=int, default=300, help="characters per sample")
    p.add_argument("--temperature", type=float, default=0.8)
    p.add_argument("--text", metavar="FILE", help="train on this UTF-8 file instead")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save", metavar="PATH", help="write a checkpoint here at the end")
    args = p.parse_args(argv)
    lstm = args.model == "lstm"
    if args.hidden is None:
        args.hidden = 256 if lstm else 128
    if args.layers is None:
        args.layers = 2 if lstm else 4
    for name in ("steps", "batch_size", "seq_len", "hidden", "layers", "heads", "eval_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.model == "gpt" and args.hidden % args.heads:
        p.error(f"--hidden ({args.hidden}) must be divisible by --heads ({args.heads})")
    if not args.temperature > 0:
        p.error("--temperature must be positive")
    return args


# ---------------------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------------------

def stdlib_text():
    parts = []
    for name in CORPUS_MODULES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            with open(spec.origin, encoding="utf-8") as f:
                parts.append(f.read())
    if not parts:
        sys.exit("char_lm: this Python installation ships no standard-library sources; "
                 "pass a text file with --text FILE")
    return "\n".join(parts)


class CharChunks(Dataset):
    """Non-overlapping windows of a token sequence: (input, the input shifted by one)."""

    def __init__(self, tokens, seq_len):
        self.tokens, self.seq_len = tokens, seq_len

    def __len__(self):
        return (len(self.tokens) - 1) // self.seq_len

    def __getitem__(self, i):
        start = i * self.seq_len
        chunk = self.tokens[start:start + self.seq_len + 1]
        return chunk[:-1], chunk[1:]


def forever(loader):
    """Batches from `loader`, epoch after epoch (reshuffled each time)."""
    while True:
        yield from loader


# ---------------------------------------------------------------------------------------
# models: both map (batch, time) token ids to (batch, time, vocab) logits
# ---------------------------------------------------------------------------------------

class LSTMLM(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.rnn = nn.LSTM(hidden, hidden, layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, idx, state=None):
        out, state = self.rnn(self.embed(idx), state)
        return self.head(out), state

    @kindle.no_grad()
    def generate(self, prompt, length, temperature, generator):
        # The recurrent state carries the whole context: feed one character at a time.
        logits, state = self(prompt.unsqueeze(0))
        out = []
        for _ in range(length):
            probs = F.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = kindle.multinomial(probs, 1, generator=generator)
            out.append(nxt.item())
            logits, state = self(nxt.view(1, 1), state)
        return out


class Block(nn.Module):
    """Pre-norm transformer block: causal multi-head self-attention, then a GELU MLP."""

    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(self.ln1(x)).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab, width, layers, heads, context):
        super().__init__()
        self.context = context
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*(Block(width, heads) for _ in range(layers)))
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, idx, state=None):
        x = self.tok(idx) + self.pos(kindle.arange(idx.shape[1]))
        return self.head(self.ln_f(self.blocks(x))), None

    @kindle.no_grad()
    def generate(self, prompt, length, temperature, generator):
        # No cache: each step re-reads the last `context` characters.
        idx = prompt.unsqueeze(0)
        out = []
        for _ in range(length):
            logits, _ = self(idx[:, -self.context:])
            probs = F.softmax(logits[0, -1] / temperature, dim=-1)
            nxt = kindle.multinomial(probs, 1, generator=generator)
            out.append(nxt.item())
            idx = kindle.cat([idx, nxt.view(1, 1)], dim=1)
        return out


# ---------------------------------------------------------------------------------------
# training
# ---------------------------------------------------------------------------------------

@kindle.no_grad()
def evaluate(model, loader, max_batches=20):
    """Mean next-character cross-entropy (nats) over up to `max_batches` batches."""
    model.eval()
    total, count = 0.0, 0
    for i, (x, y) in enumerate(loader):
        if i == max_batches:
            break
        logits, _ = model(x)
        total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
        count += y.numel()
    model.train()
    return total / count


def log(msg):
    (tqdm.write if tqdm is not None else print)(msg)


def main(argv=None):
    args = parse_args(argv)
    kindle.manual_seed(args.seed)
    if args.text:
        with open(args.text, encoding="utf-8") as f:
            text = f.read()
        source = args.text
    else:
        text = stdlib_text()
        source = f"the sources of {len(CORPUS_MODULES)} standard-library modules"
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    tokens = kindle.tensor([stoi[c] for c in text], dtype=kindle.int64)
    split = int(0.9 * len(tokens))
    train_tokens, val_tokens = tokens[:split], tokens[split:]
    if len(val_tokens) <= args.seq_len:
        sys.exit(f"char_lm: the text ({len(text)} characters) is too short for --seq-len "
                 f"{args.seq_len}")

    # The loss to beat: predicting every character from its frequency alone.
    freq = kindle.bincount(train_tokens, minlength=len(chars)).double() / len(train_tokens)
    unigram = -(freq * freq.clamp_min(1e-30).log()).sum().item()
    print(f"text: {source}: {len(text):,} characters, vocabulary {len(chars)}")
    print(f"unigram entropy {unigram:.3f} nats/char ({unigram / math.log(2):.3f} bits/char); "
          f"uniform guess {math.log(len(chars)):.3f} nats/char")

    gen = kindle.Generator().manual_seed(args.seed)
    train_loader = DataLoader(CharChunks(train_tokens, args.seq_len), batch_size=args.batch_size,
                              shuffle=True, drop_last=True, generator=gen)
    val_loader = DataLoader(CharChunks(val_tokens, args.seq_len), batch_size=args.batch_size)
    if args.model == "lstm":
        model = LSTMLM(len(chars), args.hidden, args.layers)
    else:
        model = GPT(len(chars), args.hidden, args.layers, args.heads, args.seq_len)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {args.model}, {n_params:,} parameters; {args.steps} steps of "
          f"{args.batch_size}x{args.seq_len} characters")
    optimizer = kindle.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = kindle.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=args.lr,
                                                     total_steps=args.steps, pct_start=0.1)

    prompt = kindle.tensor([stoi[c] for c in "def " if c in stoi] or [0])
    steps = range(1, args.steps + 1)
    bar = tqdm(steps, desc=f"{args.model}", dynamic_ncols=True) if tqdm is not None else steps
    batches = forever(train_loader)
    start = time.perf_counter()
    val_loss = float("nan")
    for step in bar:
        x, y = next(batches)
        logits, _ = model(x)
        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if tqdm is not None:
            bar.set_postfix(loss=f"{loss.item():.3f}")
        if step % args.eval_every == 0 or step == args.steps:
            val_loss = evaluate(model, val_loader)
            sample = model.generate(prompt, args.sample_len, args.temperature, gen)
            text_out = "".join(chars[i] for i in prompt.tolist() + sample)
            log(f"step {step}: train loss {loss.item():.3f}, validation loss {val_loss:.3f} "
                f"nats/char (unigram entropy {unigram:.3f})\n--- sample ---\n{text_out}\n"
                f"--------------")
    elapsed = time.perf_counter() - start
    print(f"trained {args.steps} steps in {elapsed:.1f} s "
          f"({args.steps * args.batch_size * args.seq_len / elapsed:,.0f} characters/s)")
    print(f"final validation loss {val_loss:.3f} nats/char ({val_loss / math.log(2):.3f} "
          f"bits/char) vs unigram entropy {unigram:.3f}: "
          f"{'below' if val_loss < unigram else 'NOT below'} by {unigram - val_loss:.3f}")
    if args.save:
        kindle.save({"model": model.state_dict(), "chars": "".join(chars), "args": vars(args)},
                    args.save)
        print(f"saved {args.save}")


if __name__ == "__main__":
    main()
